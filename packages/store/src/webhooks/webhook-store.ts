import {
  newId,
  WEBHOOK_DEFAULTS,
  type Webhook,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookSettings,
} from '@tether/protocol';
import { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import { type TetherKeys, WEBHOOK_QUEUE_NAME } from '../redis/keys.js';
import { promoteJob } from '../runs/jobs.js';
import * as scripts from './commands/scripts.js';

/**
 * A tenant's webhooks in Redis, under the tenant's hash tag `{w_<tenant>}`
 * (keys.ts, `WebhookKeys`): its endpoints, and per endpoint the deliveries due
 * (one per run at a time: the head of the run's chain), those in flight, and
 * a log; a hash per delivery. Every write is a Lua script on that one slot.
 *
 * Deliveries are sent by one **pump** job per endpoint in the webhooks queue
 * (BullMQ, prefix `keys.webhookQueuePrefix`): active while deliveries are due,
 * delayed until the next retry otherwise, woken by whoever makes a delivery
 * due while it sleeps (its lease in the endpoint's `pump` field has run out).
 */

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = {
  maxEndpoints: WEBHOOK_DEFAULTS.maxEndpoints,
  backoffMs: WEBHOOK_DEFAULTS.backoffMs,
  backoffMaxMs: WEBHOOK_DEFAULTS.backoffMaxMs,
  maxAgeMs: WEBHOOK_DEFAULTS.maxAgeMs,
  disableAfterMs: WEBHOOK_DEFAULTS.disableAfterMs,
  logMax: WEBHOOK_DEFAULTS.logMax,
  retentionSeconds: WEBHOOK_DEFAULTS.retentionSeconds,
};

/** Secrets at rest: `@tether/config`'s SecretBox. */
export interface Sealer {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

/** An endpoint as stored (times in epoch ms; the secret sealed). */
export interface EndpointRecord {
  id: string;
  url: string;
  events: string[];
  description?: string | undefined;
  secret: string;
  enabled: boolean;
  disabledAt?: number | undefined;
  disabledReason?: string | undefined;
  failingSince?: number | undefined;
  createdAt: number;
}

/** A delivery as stored (times in epoch ms). */
export interface DeliveryRecord {
  id: string;
  endpointId: string;
  messageId: string;
  type: string;
  runId: string;
  eventId: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatus?: number | undefined;
  lastError?: string | undefined;
  lastAttemptAt?: number | undefined;
  nextAttemptAt?: number | undefined;
  createdAt: number;
  finishedAt?: number | undefined;
  redeliveryOf?: string | undefined;
}

/** A delivery a pump took, with what it sends. */
export interface TakenDelivery {
  id: string;
  runId: string;
  eventId: string;
  type: string;
  messageId: string;
  /** The body sent (JSON), but for the answer token. */
  payload: string;
  /** The sealed answer token of a `clarify.requested` delivery, if any. */
  token: string | undefined;
  /** Attempts made before this one. */
  attempts: number;
  createdAt: number;
}

/** What a pump's take found: the endpoint as it is now, and the deliveries due. */
export interface Take {
  url: string;
  secret: string;
  enabled: boolean;
  /** When the next delivery not taken is due (epoch ms). */
  nextDueMs: number | undefined;
  deliveries: TakenDelivery[];
}

/**
 * How an attempt (or a delivery without one) ends: `delivered` (2xx), `retrying` (failed, tried
 * again later), `failed` (failed, out of time), `disabled` (not sent: the endpoint is disabled),
 * `dropped` (not sent: the endpoint is gone).
 */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed' | 'disabled' | 'dropped';

/** The data of a pump's job. */
export interface PumpJobData {
  tenant: string;
  endpointId: string;
}

export interface WebhookStoreOptions {
  redis: RedisClient;
  /** The webhooks queue's connection (BullMQ defines its scripts on it). Default `redis`. */
  queueConnection?: RedisClient;
  keys: TetherKeys;
  settings?: Partial<WebhookSettings>;
}

/** The lease a dispatch gives a pump it wakes (ms): others making deliveries due meanwhile leave it be. */
export const WAKE_LEASE_MS = 10_000;

/** The webhooks queue, on a connection: one pump job per endpoint. */
export function createWebhookQueue(connection: RedisClient, keys: TetherKeys): Queue<PumpJobData> {
  return new Queue<PumpJobData>(WEBHOOK_QUEUE_NAME, {
    connection,
    prefix: keys.webhookQueuePrefix,
    streams: { events: { maxLen: 100 } },
  });
}

/** The id of an endpoint's pump job (BullMQ refuses `:` in job ids). */
export function pumpJobId(tenant: string, endpointId: string): string {
  return `${tenant}.${endpointId}`;
}

export class WebhookStore {
  readonly redis: RedisClient;
  readonly keys: TetherKeys;
  readonly settings: Readonly<WebhookSettings>;
  readonly #queueConnection: RedisClient;
  #queue: Queue<PumpJobData> | undefined;

  constructor(options: WebhookStoreOptions) {
    this.redis = options.redis;
    this.keys = options.keys;
    this.#queueConnection = options.queueConnection ?? options.redis;
    const given: Partial<WebhookSettings> = options.settings ?? {};
    const settings = { ...DEFAULT_WEBHOOK_SETTINGS };
    for (const name of Object.keys(settings) as (keyof WebhookSettings)[]) {
      settings[name] = given[name] ?? settings[name];
    }
    this.settings = Object.freeze(settings);
    for (const [name, value] of Object.entries(this.settings)) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`WebhookStore setting "${name}" must be a positive integer, got ${value}`);
      }
    }
  }

  /** The webhooks queue (opened on first use). */
  get queue(): Queue<PumpJobData> {
    this.#queue ??= createWebhookQueue(this.#queueConnection, this.keys);
    return this.#queue;
  }

  /** Adds an endpoint; `limit` when the tenant has `maxEndpoints` already. */
  async create(
    tenant: string,
    endpoint: { url: string; events: readonly string[]; description?: string | undefined; secret: string },
  ): Promise<EndpointRecord | 'limit'> {
    const keys = this.keys.webhooks(tenant);
    const id = newId('whk');
    const fields = ['url', endpoint.url, 'events', endpoint.events.join(' '), 'secret', endpoint.secret];
    if (endpoint.description !== undefined) fields.push('description', endpoint.description);
    const createdAt = await scripts.webhookCreate.run(this.redis, {
      keys: { endpoints: keys.endpoints, endpoint: keys.endpoint(id) },
      args: { id, max: this.settings.maxEndpoints, fields },
    });
    if (createdAt < 0) return 'limit';
    await this.redis.sadd(this.keys.webhookTenants, tenant);
    await this.changed(tenant);
    return {
      id,
      url: endpoint.url,
      events: [...endpoint.events],
      description: endpoint.description,
      secret: endpoint.secret,
      enabled: true,
      createdAt,
    };
  }

  /** The tenant's endpoints, oldest first. */
  async list(tenant: string): Promise<EndpointRecord[]> {
    const keys = this.keys.webhooks(tenant);
    const reply = await scripts.webhookEndpoints.run(this.redis, {
      keys: { endpoints: keys.endpoints },
      args: { endpointPrefix: keys.endpoint('') },
    });
    const endpoints: EndpointRecord[] = [];
    for (let i = 0; i < reply.length; i += 2) {
      endpoints.push(endpointOf(reply[i] as string, hashOf(reply[i + 1] as string[])));
    }
    return endpoints;
  }

  /** One endpoint of the tenant, or undefined. */
  async get(tenant: string, id: string): Promise<EndpointRecord | undefined> {
    const fields = await this.redis.hgetall(this.keys.webhooks(tenant).endpoint(id));
    return fields.url === undefined ? undefined : endpointOf(id, fields);
  }

  /**
   * Changes an endpoint; false when it does not exist. `enabled: true` enables a disabled one
   * again (its failures are forgotten); `description: ''` removes the description.
   */
  async update(
    tenant: string,
    id: string,
    changes: {
      url?: string | undefined;
      events?: readonly string[] | undefined;
      description?: string | undefined;
      enabled?: boolean | undefined;
      secret?: string | undefined;
    },
  ): Promise<boolean> {
    const set: string[] = [];
    const remove: string[] = [];
    if (changes.url !== undefined) set.push('url', changes.url);
    if (changes.events !== undefined) set.push('events', changes.events.join(' '));
    if (changes.secret !== undefined) set.push('secret', changes.secret);
    if (changes.description === '') remove.push('description');
    else if (changes.description !== undefined) set.push('description', changes.description);
    if (changes.enabled === true) set.push('enabled', '1');
    if (changes.enabled === false) set.push('enabled', '0', 'disabledAt', String(Date.now()));
    if (changes.enabled === false) set.push('disabledReason', 'disabled by request');
    const updated = await scripts.webhookUpdate.run(this.redis, {
      keys: { endpoint: this.keys.webhooks(tenant).endpoint(id) },
      args: { setCount: set.length / 2, fields: [...set, ...remove] },
    });
    if (updated !== 1) return false;
    await this.changed(tenant);
    // Enabled again: its pump goes on with what is due.
    if (changes.enabled === true) await this.wake(tenant, id);
    return true;
  }

  /** Removes an endpoint (its pump stops); false when it did not exist. */
  async delete(tenant: string, id: string): Promise<boolean> {
    const keys = this.keys.webhooks(tenant);
    const deleted = await scripts.webhookDelete.run(this.redis, {
      keys: {
        endpoints: keys.endpoints,
        endpoint: keys.endpoint(id),
        due: keys.due(id),
        inflight: keys.inflight(id),
        log: keys.log(id),
      },
      args: { id },
    });
    if (deleted !== 1) return false;
    await this.changed(tenant);
    // A sleeping pump goes now; an active one finds the endpoint gone at its next take.
    await this.queue.remove(pumpJobId(tenant, id)).catch(() => 0);
    return true;
  }

  /** Tells every process that the tenant's endpoints changed (they drop their copy). */
  async changed(tenant: string): Promise<void> {
    await this.redis.publish(this.keys.webhooksChannel, tenant);
  }

  /** A page of an endpoint's delivery log, newest first; `cursor` is the last page's `nextCursor`. */
  async deliveries(
    tenant: string,
    endpointId: string,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<{ deliveries: DeliveryRecord[]; nextCursor: string | null }> {
    const keys = this.keys.webhooks(tenant);
    const [afterScore = '', afterId = ''] = options.cursor ? options.cursor.split('_whd_') : [];
    const reply = await scripts.webhookDeliveries.run(this.redis, {
      keys: { log: keys.log(endpointId) },
      args: {
        deliveryPrefix: keys.delivery(''),
        afterId: afterId ? `whd_${afterId}` : '',
        afterScore: afterScore || '+inf',
        limit: options.limit,
      },
    });
    const [more, ...rest] = reply;
    const deliveries: DeliveryRecord[] = [];
    let last = '';
    for (let i = 0; i < rest.length; i += 3) {
      const id = rest[i] as string;
      deliveries.push(deliveryOf(id, hashOf(rest[i + 2] as string[])));
      last = `${rest[i + 1] as string}_${id}`;
    }
    return { deliveries, nextCursor: more === 1 && last ? last : null };
  }

  /** One delivery of the tenant's endpoint, or undefined. */
  async delivery(
    tenant: string,
    endpointId: string,
    deliveryId: string,
  ): Promise<DeliveryRecord | undefined> {
    const fields = await this.redis.hgetall(this.keys.webhooks(tenant).delivery(deliveryId));
    if (fields.endpoint !== endpointId) return undefined;
    return deliveryOf(deliveryId, fields);
  }

  /**
   * Sends a delivery again (a new delivery of the same message, at the end of its run's chain);
   * `missing` for an unknown delivery or endpoint, `disabled` while the endpoint is disabled.
   */
  async redeliver(
    tenant: string,
    endpointId: string,
    deliveryId: string,
  ): Promise<DeliveryRecord | 'missing' | 'disabled'> {
    const original = await this.delivery(tenant, endpointId, deliveryId);
    if (!original) return 'missing';
    const keys = this.keys.webhooks(tenant);
    const id = newId('whd');
    const result = await scripts.webhookRedeliver.run(this.redis, {
      keys: {
        endpoint: keys.endpoint(endpointId),
        due: keys.due(endpointId),
        log: keys.log(endpointId),
        original: keys.delivery(deliveryId),
        delivery: keys.delivery(id),
        chain: keys.chain(original.runId, endpointId),
      },
      args: { id, originalId: deliveryId, deliveryTtl: this.deliveryTtlSeconds, wakeMs: WAKE_LEASE_MS },
    });
    if (result === 'missing' || result === 'disabled') return result;
    if (result === 'wake') await this.wake(tenant, endpointId);
    return (await this.delivery(tenant, endpointId, id)) ?? 'missing';
  }

  /** How long a new delivery's hash stays at most: its tries, then the log's retention. */
  get deliveryTtlSeconds(): number {
    return Math.ceil(this.settings.maxAgeMs / 1000) + this.settings.retentionSeconds;
  }

  /**
   * Wakes an endpoint's pump: adds its job, or promotes it when it is delayed. A job that is
   * active (its pump still running) is left alone: before it sleeps it looks at what is due.
   */
  async wake(tenant: string, endpointId: string): Promise<void> {
    const jobId = pumpJobId(tenant, endpointId);
    const job = await this.queue.getJob(jobId);
    if (!job) {
      await this.queue.add(
        'pump',
        { tenant, endpointId },
        { jobId, removeOnComplete: true, removeOnFail: true },
      );
      return;
    }
    await promoteJob(job);
  }

  /**
   * An endpoint's pump takes up to `max` deliveries due now and renews its lease (`leaseMs`);
   * `recover` at the start of an activation. Undefined when the endpoint is gone.
   */
  async take(
    tenant: string,
    endpointId: string,
    max: number,
    leaseMs: number,
    recover: boolean,
  ): Promise<Take | undefined> {
    const keys = this.keys.webhooks(tenant);
    const reply = await scripts.webhookTake.run(this.redis, {
      keys: {
        endpoint: keys.endpoint(endpointId),
        due: keys.due(endpointId),
        inflight: keys.inflight(endpointId),
      },
      args: { max, deliveryPrefix: keys.delivery(''), leaseMs, recover: recover ? 1 : 0 },
    });
    if (!reply) return undefined;
    const [url, secret, enabled, nextDue, ...rest] = reply;
    const deliveries: TakenDelivery[] = [];
    for (let i = 0; i < rest.length; i += 9) {
      const [id, runId, eventId, type, messageId, payload, token, attempts, createdAt] = rest.slice(
        i,
        i + 9,
      ) as [string, string, string, string, string, string, string, string, string];
      deliveries.push({
        id,
        runId,
        eventId,
        type,
        // A delivery's message is itself, unless it is a redelivery.
        messageId: messageId || id,
        payload,
        token: token || undefined,
        attempts: Number(attempts),
        createdAt: Number(createdAt),
      });
    }
    return {
      url,
      secret,
      enabled: enabled === '1',
      nextDueMs: nextDue ? Number(nextDue) : undefined,
      deliveries,
    };
  }

  /**
   * Records how an attempt of a delivery (or the delivery) ended; see `webhookSettle`. Returns
   * whether this disabled the endpoint (every process is told then).
   */
  async settle(
    tenant: string,
    endpointId: string,
    delivery: { id: string; runId: string },
    end: {
      outcome: AttemptOutcome;
      httpStatus?: number | undefined;
      error?: string | undefined;
      nextAtMs?: number | undefined;
    },
  ): Promise<{ status: string; disabled: boolean }> {
    const keys = this.keys.webhooks(tenant);
    const [status, disabled] = await scripts.webhookSettle.run(this.redis, {
      keys: {
        endpoint: keys.endpoint(endpointId),
        due: keys.due(endpointId),
        inflight: keys.inflight(endpointId),
        delivery: keys.delivery(delivery.id),
        chain: keys.chain(delivery.runId, endpointId),
      },
      args: {
        deliveryId: delivery.id,
        outcome: end.outcome,
        httpStatus: end.httpStatus === undefined ? '' : String(end.httpStatus),
        error: end.error ?? '',
        nextAt: end.nextAtMs ?? 0,
        retention: this.settings.retentionSeconds,
        disableAfterMs: this.settings.disableAfterMs,
        reason: `every attempt failed for ${Math.round(this.settings.disableAfterMs / 3_600_000)} h (TETHER_WEBHOOK_DISABLE_AFTER_MS)`,
      },
    });
    if (disabled === 1) await this.changed(tenant);
    return { status, disabled: disabled === 1 };
  }

  /**
   * Whether an endpoint's pump may sleep: `busy` while a delivery is due now; else asleep, until
   * the next due time (undefined: nothing is due). Undefined when the endpoint is gone.
   */
  async sleep(
    tenant: string,
    endpointId: string,
  ): Promise<{ busy: true } | { busy: false; untilMs: number | undefined } | undefined> {
    const keys = this.keys.webhooks(tenant);
    const reply = await scripts.webhookSleep.run(this.redis, {
      keys: { endpoint: keys.endpoint(endpointId), due: keys.due(endpointId) },
      args: {},
    });
    if (!reply) return undefined;
    if (reply[0] === 'busy') return { busy: true };
    return { busy: false, untilMs: reply[1] ? Number(reply[1]) : undefined };
  }

  /** Whether anything of the endpoint is due by `atMs` (a pump's look after it moved its job to delayed). */
  async dueBy(tenant: string, endpointId: string, atMs: number): Promise<boolean> {
    const first = await this.redis.zrange(this.keys.webhooks(tenant).due(endpointId), '0', '0', 'WITHSCORES');
    return first[1] !== undefined && Number(first[1]) <= atMs;
  }

  async close(): Promise<void> {
    await this.#queue?.close();
  }
}

/** An endpoint as the API shows it: never its secret. */
export function webhookView(endpoint: EndpointRecord): Webhook {
  const view: Webhook = {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    enabled: endpoint.enabled,
    createdAt: new Date(endpoint.createdAt).toISOString(),
  };
  if (endpoint.description !== undefined) view.description = endpoint.description;
  if (endpoint.disabledAt !== undefined) view.disabledAt = new Date(endpoint.disabledAt).toISOString();
  if (endpoint.disabledReason !== undefined) view.disabledReason = endpoint.disabledReason;
  if (endpoint.failingSince !== undefined) view.failingSince = new Date(endpoint.failingSince).toISOString();
  return view;
}

/** A delivery as the API shows it. */
export function deliveryView(delivery: DeliveryRecord): WebhookDelivery {
  const view: WebhookDelivery = {
    id: delivery.id,
    messageId: delivery.messageId,
    type: delivery.type,
    runId: delivery.runId,
    eventId: delivery.eventId,
    status: delivery.status,
    attempts: delivery.attempts,
    createdAt: new Date(delivery.createdAt).toISOString(),
  };
  const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
  if (delivery.lastStatus !== undefined) view.lastStatus = delivery.lastStatus;
  if (delivery.lastError !== undefined) view.lastError = delivery.lastError;
  if (delivery.lastAttemptAt !== undefined) view.lastAttemptAt = iso(delivery.lastAttemptAt);
  if (delivery.nextAttemptAt !== undefined) view.nextAttemptAt = iso(delivery.nextAttemptAt);
  if (delivery.finishedAt !== undefined) view.finishedAt = iso(delivery.finishedAt);
  if (delivery.redeliveryOf !== undefined) view.redeliveryOf = delivery.redeliveryOf;
  return view;
}

function hashOf(flat: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
  return fields;
}

const optionalNumber = (value: string | undefined) => (value === undefined ? undefined : Number(value));

function endpointOf(id: string, fields: Record<string, string>): EndpointRecord {
  return {
    id,
    url: fields.url ?? '',
    events: (fields.events ?? '').split(' ').filter(Boolean),
    description: fields.description,
    secret: fields.secret ?? '',
    enabled: fields.enabled === '1',
    disabledAt: optionalNumber(fields.disabledAt),
    disabledReason: fields.disabledReason,
    failingSince: optionalNumber(fields.failingSince),
    createdAt: Number(fields.createdAt ?? 0),
  };
}

function deliveryOf(id: string, fields: Record<string, string>): DeliveryRecord {
  return {
    id,
    endpointId: fields.endpoint ?? '',
    messageId: fields.message ?? id,
    type: fields.type ?? '',
    runId: fields.runId ?? '',
    eventId: fields.eventId ?? '',
    status: (fields.status ?? 'pending') as WebhookDeliveryStatus,
    attempts: Number(fields.attempts ?? 0),
    lastStatus: optionalNumber(fields.lastStatus),
    lastError: fields.lastError,
    lastAttemptAt: optionalNumber(fields.lastAttemptAt),
    nextAttemptAt: fields.status === 'pending' ? optionalNumber(fields.nextAttemptAt) : undefined,
    createdAt: Number(fields.createdAt ?? 0),
    finishedAt: optionalNumber(fields.finishedAt),
    redeliveryOf: fields.redeliveryOf,
  };
}
