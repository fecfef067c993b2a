import { createHash, randomBytes } from 'node:crypto';
import { WEBHOOK_ALL_EVENTS, WEBHOOK_EVENT_TYPES } from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import { TenantCache } from '../redis/tenant-cache.js';
import type { RunStore } from '../runs/run-store.js';
import * as scripts from './commands/scripts.js';
import { type Sealer, WAKE_LEASE_MS, type WebhookStore } from './webhook-store.js';

/**
 * Turns a run's logged events into webhook deliveries (docs/architecture.md,
 * "Webhooks"). Whoever appends events an endpoint may want dispatches the run
 * right after: the worker at the end of each attempt (before it moves the
 * job), the API after an answer or a cancel. A dispatch is two scripts:
 *
 * 1. `webhookCollect`, on the run's slot: its tenant, status, session and
 *    metadata, and the events of the types the tenant collects after the
 *    run's hint (an answer token's hash recorded in a `clarify.requested`
 *    question or an `approval.requested` call);
 * 2. `webhookDispatch`, on the tenant's slot: a delivery per event and
 *    endpoint after the run's cursor, at the end of the run's chain to that
 *    endpoint, and the cursor moved in the same step, so an event's deliveries
 *    are recorded once however often it is dispatched.
 *
 * An `approval.requested` whose policy names an `approver` (one of the
 * tenant's endpoints) goes to that endpoint too, whatever it subscribes to:
 * its pump takes a decision in the answer (apps/worker's webhooks/approver.ts).
 * So a tenant with any enabled endpoint collects `approval.requested`.
 *
 * At least once: a worker that dies between its step and the dispatch leaves
 * its job active; the job comes back (stall recovery), and a job that comes
 * back dispatches its run before anything else. An API step marks the run in
 * the tenant's `dirty` set before it (`around`), and the `sweep` dispatches the
 * runs marked long ago, should the API process have died before it could.
 *
 * A tenant with no endpoint costs nothing: each process keeps, per tenant,
 * the types it collects, for `cacheMs` or until a change is published on
 * `keys.webhooksChannel` (a {@link TenantCache}).
 */

/** The answer token of a dispatch: the token (sealed, to be sent) and its hash (recorded). */
interface AnswerToken {
  token: string;
  hash: string;
}

export interface WebhookDispatcherOptions {
  store: RunStore;
  webhooks: WebhookStore;
  /** Seals the answer tokens kept with `clarify.requested` and `approval.requested` deliveries; without it they carry none. */
  secrets?: Sealer | undefined;
  /** The API's base URL, for an answer token's `answer.url` (`TETHER_PUBLIC_URL`). */
  publicUrl: string;
  /** A connection in subscriber mode (shared), to hear that a tenant's endpoints changed. */
  subscriber?: RedisClient | undefined;
  /** How long a tenant's subscribed types are kept without a change heard (ms). Default 10,000. */
  cacheMs?: number;
  /** Log entries one look at a run's log reads at most. Default 500. */
  scan?: number;
  /**
   * Told of the endpoints that got a delivery due while their pump is awake: a pump of this
   * process that waits for work takes it at once.
   */
  onDue?: ((tenant: string, endpointId: string) => void) | undefined;
}

/** A run whose look read at least this many entries leaves a hint for the next one. */
const HINT_AFTER = 64;

/** Answer tokens: `wat_` and 32 random bytes. */
export function newAnswerToken(): AnswerToken {
  const token = `wat_${randomBytes(32).toString('base64url')}`;
  return { token, hash: answerTokenHash(token) };
}

/** What is recorded of an answer token: its SHA-256, hex. */
export function answerTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The events whose delivery carries an answer token, and the route the token answers on. */
const ANSWER_ROUTES: Partial<Record<string, string>> = {
  'clarify.requested': 'clarify',
  'approval.requested': 'approvals',
};

const APPROVAL_REQUESTED = 'approval.requested';

/** How the data of an event told on a crew root for its child starts (the store's `mirrorToRoot` puts it first). */
const MIRRORED = '{"childRunId":';

/** What the dispatch reads of the data of an event of {@link ANSWER_ROUTES}. */
interface AnswerableData {
  requestId: string;
  expiresAt: string;
  /** An approval request's approver endpoint (its policy's `approver`). */
  approver?: unknown;
}

/** The endpoint an event is sent to whatever it subscribes to: an approval request's approver, or ''. */
function approverOf(type: string, data: AnswerableData | undefined): string {
  if (type !== APPROVAL_REQUESTED || !data) return '';
  return typeof data.approver === 'string' ? data.approver : '';
}

export class WebhookDispatcher {
  readonly #store: RunStore;
  readonly #webhooks: WebhookStore;
  readonly #secrets: Sealer | undefined;
  readonly #publicUrl: string;
  readonly #scan: number;
  readonly #onDue: ((tenant: string, endpointId: string) => void) | undefined;
  readonly #types: TenantCache<ReadonlySet<string>>;

  constructor(options: WebhookDispatcherOptions) {
    this.#store = options.store;
    this.#webhooks = options.webhooks;
    this.#secrets = options.secrets;
    this.#publicUrl = options.publicUrl.replace(/\/+$/, '');
    this.#scan = options.scan ?? 500;
    this.#onDue = options.onDue;
    this.#types = new TenantCache({
      load: (tenant) => this.#load(tenant),
      ttlMs: options.cacheMs ?? 10_000,
      channel: options.store.keys.webhooksChannel,
      subscriber: options.subscriber,
    });
  }

  /** Resolves once changes to endpoints are heard (the subscription is confirmed). */
  listen(): Promise<void> {
    return this.#types.listen();
  }

  /**
   * The event types collected for the tenant: those its enabled endpoints subscribe to, and
   * `approval.requested` when it has any (a policy may name one as its approver). Empty: no
   * enabled endpoint.
   */
  types(tenant: string): Promise<ReadonlySet<string>> {
    return this.#types.get(tenant);
  }

  async #load(tenant: string): Promise<ReadonlySet<string>> {
    const types = new Set<string>();
    for (const endpoint of await this.#webhooks.list(tenant)) {
      if (!endpoint.enabled) continue;
      types.add(APPROVAL_REQUESTED);
      for (const type of endpoint.events) {
        if (type === WEBHOOK_ALL_EVENTS) for (const each of WEBHOOK_EVENT_TYPES) types.add(each);
        else types.add(type);
      }
    }
    return types;
  }

  /**
   * Records the deliveries of the run's events not dispatched yet; returns how many. Pass the
   * tenant when known: a tenant whose endpoints want nothing then costs no round trip (one small
   * read when it is not given).
   */
  async dispatch(runId: string, tenant?: string): Promise<number> {
    const keys = this.#store.keys.run(runId);
    // Unknown, the tenant is read first: one small read, where the look at the log would read (and
    // return) up to `scan` entries of a run whose tenant wants nothing.
    const known = tenant ?? (await this.#store.redis.hget(keys.record, 'tenant'));
    if (!known) return 0;
    let types = await this.types(known);
    if (types.size === 0) return 0;
    const answer =
      types.has('clarify.requested') || types.has('approval.requested') ? newAnswerToken() : undefined;
    let after = '';
    let total = 0;
    for (;;) {
      const reply = await scripts.webhookCollect.run(this.#store.redis, {
        keys,
        args: {
          types: ` ${[...types].join(' ')} `,
          after,
          scan: this.#scan,
          tokenHash: answer?.hash ?? '',
        },
      });
      if (!reply) return total;
      const [owner, status, session, metadata, lastRead, scanned, ...flat] = reply;
      if (owner !== known) types = await this.types(owner);
      if (types.size === 0) return total;
      const events: string[] = [];
      let sealed: string | undefined;
      for (let i = 0; i < flat.length; i += 3) {
        const [id, type, data] = flat.slice(i, i + 3) as [string, string, string];
        if (!types.has(type)) continue;
        // A crew root's copy of a child's approval event: the child's own is delivered (and answered).
        if (data.startsWith(MIRRORED)) continue;
        let rest = `"type":${JSON.stringify(type)},"at":${JSON.stringify(eventTime(id))},"runId":${JSON.stringify(runId)}`;
        if (session) rest += `,"sessionId":${JSON.stringify(session)}`;
        rest += `,"data":${data},"run":{"status":${JSON.stringify(status)}${metadata ? `,"metadata":${metadata}` : ''}}`;
        let token = '';
        const route = ANSWER_ROUTES[type];
        const question = route ? (JSON.parse(data) as AnswerableData) : undefined;
        if (question && answer && this.#secrets) {
          const url = `${this.#publicUrl}/v1/runs/${runId}/${route}/${question.requestId}`;
          // Last in the payload: the pump puts the token in front of `url` when it sends it.
          rest += `,"answer":{"url":${JSON.stringify(url)},"expiresAt":${JSON.stringify(question.expiresAt)}}`;
          sealed ??= this.#secrets.seal(answer.token);
          token = sealed;
        }
        events.push(id, type, `${rest}}`, token, approverOf(type, question));
      }
      if (events.length > 0) total += await this.#record(owner, runId, events);
      if (lastRead && Number(scanned) >= HINT_AFTER) {
        // Everything up to it is recorded: the next look starts there.
        await this.#store.redis.set(keys.webhookHint, lastRead, 'EX', this.#store.retentionSeconds);
      }
      if (Number(scanned) < this.#scan) return total;
      after = lastRead;
    }
  }

  async #record(tenant: string, runId: string, events: string[]): Promise<number> {
    const keys = this.#store.keys.webhooks(tenant);
    const { settings } = this.#webhooks;
    const [recorded, ...due] = await scripts.webhookDispatch.run(this.#store.redis, {
      keys: { endpoints: keys.endpoints, cursor: keys.cursor(runId) },
      args: {
        runId,
        endpointPrefix: keys.endpoint(''),
        duePrefix: keys.due(''),
        logPrefix: keys.log(''),
        deliveryPrefix: keys.delivery(''),
        chainPrefix: keys.chain(runId, ''),
        cursorTtl: this.#store.retentionSeconds,
        deliveryTtl: this.#webhooks.deliveryTtlSeconds,
        logMax: settings.logMax,
        logAgeMs: settings.retentionSeconds * 1000,
        wakeMs: WAKE_LEASE_MS,
        events,
      },
    });
    const wake: string[] = [];
    for (const entry of due) {
      const endpointId = entry.slice(2);
      if (entry.startsWith('w:')) wake.push(endpointId);
      else this.#onDue?.(tenant, endpointId);
    }
    await Promise.all(wake.map((endpointId) => this.#webhooks.wake(tenant, endpointId)));
    return recorded;
  }

  /**
   * Runs an API step that appends events to `runIds` (of one tenant): marks them dirty first
   * (when the tenant's endpoints want anything), dispatches them after, then unmarks them. A
   * process that dies in between leaves them marked, for the sweep. The step's error is thrown;
   * a dispatch's is given to `onError` (the sweep dispatches those runs later).
   */
  async around<T>(
    runIds: readonly (string | undefined)[],
    step: () => Promise<T>,
    tenant: string | undefined,
    onError: (error: unknown) => void,
  ): Promise<T> {
    const ids = runIds.filter((id): id is string => Boolean(id));
    const owner =
      tenant ?? (ids[0] ? await this.#store.redis.hget(this.#store.keys.run(ids[0]).record, 'tenant') : null);
    if (!owner || ids.length === 0 || (await this.types(owner)).size === 0) return step();
    const dirty = this.#store.keys.webhooks(owner).dirty;
    const score = String(Date.now());
    await this.#store.redis.zadd(dirty, ...ids.flatMap((id) => [score, id]));
    const result = await step();
    for (const runId of ids) {
      try {
        await this.dispatch(runId, owner);
        await scripts.webhookUnmark.run(this.#store.redis, { keys: { dirty }, args: { runId, score } });
      } catch (error) {
        onError(error);
      }
    }
    return result;
  }

  /**
   * Dispatches the runs marked dirty more than `minAgeMs` ago (their API step's process died
   * before it dispatched them), at most `max` per tenant, in one process at a time (a lease of
   * `minAgeMs`). Returns how many runs it looked at; -1 when another process sweeps.
   */
  async sweep(minAgeMs: number, max = 100): Promise<number> {
    const { redis, keys } = this.#store;
    const owner = randomBytes(8).toString('hex');
    if ((await redis.set(keys.webhookSweepLock, owner, 'PX', minAgeMs, 'NX')) !== 'OK') return -1;
    let swept = 0;
    for (const tenant of await redis.smembers(keys.webhookTenants)) {
      const dirty = keys.webhooks(tenant).dirty;
      const marked = await redis.zrangebyscore(
        dirty,
        '-inf',
        Date.now() - minAgeMs,
        'WITHSCORES',
        'LIMIT',
        0,
        max,
      );
      for (let i = 0; i < marked.length; i += 2) {
        const [runId, score] = [marked[i] as string, marked[i + 1] as string];
        await this.dispatch(runId, tenant);
        await scripts.webhookUnmark.run(redis, { keys: { dirty }, args: { runId, score } });
        swept++;
      }
    }
    return swept;
  }

  /** Stops listening for changes. */
  close(): void {
    this.#types.close();
  }
}

/** An event's time, from its stream id (`<ms>-<seq>`). */
function eventTime(eventId: string): string {
  return new Date(Number(eventId.slice(0, eventId.indexOf('-')))).toISOString();
}
