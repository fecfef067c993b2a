import type { OutboundRequest } from '@tether/outbound';
import type { ApprovalDecisionBody } from '@tether/protocol';
import { promoteJob } from '@tether/store/runs';
import type {
  AttemptOutcome,
  PumpJobData,
  Sealer,
  Take,
  TakenDelivery,
  WebhookStore,
} from '@tether/store/webhooks';
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import {
  type ApproverDecisions,
  type AskedDecision,
  askedToDecide,
  decisionIn,
  takeDecision,
} from './approver.js';
import { webhookHeaders, withAnswerToken } from './sign.js';

/**
 * An endpoint's pump: the processor of its job in the webhooks queue. One job
 * per endpoint, so one activation at a time sends its deliveries:
 *
 * 1. take the deliveries due (at most `perEndpoint` in flight; the first take
 *    of an activation takes back what a dead one left in flight);
 * 2. send each (signed, through the outbound client: the resolved address
 *    checked, no redirect, 10 s, 64 KB of body read at most) and end its attempt
 *    (`endAttempt`, the one place an attempt's outcome is decided and
 *    recorded): `delivered` on a 2xx, else `retrying` after the backoff
 *    (`backoffMs` doubled per attempt, at most `backoffMaxMs`), or `failed`
 *    once that would pass `maxAgeMs`; `disabled` (not sent) while the
 *    endpoint is disabled; the 2xx answer of an approver (an approval request
 *    naming the endpoint as its policy's approver) is read, and a decision in
 *    it taken (webhooks/approver.ts) before the attempt ends;
 * 3. take again as attempts end; with nothing due and nothing in flight,
 *    linger for `lingerMs` (woken by this process's dispatches at once, and
 *    looking every `pollMs` for other processes'), then sleep: the job is
 *    delayed until the next retry (or `idleMs`), and woken through the queue
 *    by whoever makes a delivery due meanwhile. Lingering keeps a busy
 *    endpoint's pump from a sleep and a wake-up (several BullMQ moves) per
 *    delivery.
 *
 * A run's deliveries to an endpoint are a chain in Redis (only its head is
 * ever due), so they arrive in the run's event order. An activation yields its
 * worker slot after `activationMs`, for the other endpoints.
 */
export interface PumpOptions {
  store: WebhookStore;
  /** Opens the endpoints' signing secrets (`TETHER_SECRETS_KEY`). */
  secrets: Sealer | undefined;
  /** The outbound client (`@tether/outbound`'s `createOutboundRequest`), with its timeout. */
  send: OutboundRequest;
  /** Attempts in flight at once to one endpoint. */
  perEndpoint: number;
  /** Takes the decisions approvers answer with (`RunService`, which dispatches the run's new events too). */
  decisions: ApproverDecisions;
  log: Logger;
  /** True once the worker stops: an activation ends its attempts in flight and hands the job back. */
  shuttingDown?: (() => boolean) | undefined;
  /** Told of each attempt's outcome (metrics). */
  onOutcome?: ((outcome: AttemptOutcome, tenant: string) => void) | undefined;
  /** How long one activation sends before it gives its slot to another endpoint (ms). Default 30 s. */
  activationMs?: number;
  /** How long a pump with nothing due sleeps before it looks again by itself (ms). Default 5 min. */
  idleMs?: number;
  /** The lease a pump renews at each take (ms): a dispatch wakes a pump whose lease ran out. Default 60 s. */
  leaseMs?: number;
  /** Waits until this process makes a delivery of the endpoint due, or `ms` (see {@link DueSignals}). */
  waitForDue?: ((tenant: string, endpointId: string, ms: number) => Promise<void>) | undefined;
  /** How long an idle pump waits for work before it sleeps (ms). Default 2 s. */
  lingerMs?: number;
  /** How often a lingering pump looks for deliveries other processes made due (ms). Default 100. */
  pollMs?: number;
}

/** The characters of a failed answer's body kept in the log. */
const ERROR_BODY_CHARS = 200;

/** One attempt of one delivery, its outcome recorded. */
type Attempt = (data: PumpJobData, take: Take, delivery: TakenDelivery) => Promise<void>;

/** An activation's limits and waits: {@link PumpOptions}' with their defaults. */
interface PumpTiming {
  activationMs: number;
  idleMs: number;
  leaseMs: number;
  lingerMs: number;
  pollMs: number;
}

export function createPump(options: PumpOptions) {
  const timing: PumpTiming = {
    activationMs: options.activationMs ?? 30_000,
    idleMs: options.idleMs ?? 300_000,
    leaseMs: options.leaseMs ?? 60_000,
    lingerMs: options.lingerMs ?? 2_000,
    pollMs: options.pollMs ?? 100,
  };
  const attempt = deliveryAttempt(options);

  /** The job's processor: one activation of the endpoint's pump. */
  const process = (job: Job<PumpJobData>, token?: string): Promise<string> =>
    activate(job, token, options, timing, attempt);

  return { process };
}

/** One activation: take, send and take again until it yields, sleeps or finds the endpoint gone. */
async function activate(
  job: Job<PumpJobData>,
  token: string | undefined,
  options: PumpOptions,
  timing: PumpTiming,
  attempt: Attempt,
): Promise<string> {
  const { store, log } = options;
  const data = job.data;
  const started = Date.now();
  const inflight = new Map<string, Promise<void>>();
  let recover = true;
  let found = true;
  let idleSince: number | undefined;
  for (;;) {
    const yielding = Date.now() - started > timing.activationMs || options.shuttingDown?.() === true;
    const room = options.perEndpoint - inflight.size;
    if (room > 0 && !yielding && (found || inflight.size === 0 || recover)) {
      const take = await store.take(data.tenant, data.endpointId, room, timing.leaseMs, recover);
      recover = false;
      if (!take) {
        await Promise.allSettled(inflight.values());
        return 'the endpoint is gone';
      }
      found = take.deliveries.length > 0;
      if (found) idleSince = undefined;
      for (const delivery of take.deliveries) {
        const sent = attempt(data, take, delivery)
          .catch((error: unknown) =>
            log.warn({ err: error, deliveryId: delivery.id }, 'a webhook attempt could not be recorded'),
          )
          .finally(() => inflight.delete(delivery.id));
        inflight.set(delivery.id, sent);
      }
      if (found) continue;
    }
    if (inflight.size > 0) {
      await Promise.race(inflight.values());
      found = true;
      continue;
    }
    if (yielding) {
      // Others' turn: back of the line, at once.
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    idleSince ??= Date.now();
    if (options.waitForDue && Date.now() - idleSince < timing.lingerMs) {
      await options.waitForDue(data.tenant, data.endpointId, timing.pollMs);
      found = true;
      continue;
    }
    const sleep = await store.sleep(data.tenant, data.endpointId);
    if (!sleep) return 'the endpoint is gone';
    if (sleep.busy) {
      found = true;
      continue;
    }
    await job.moveToDelayed(Math.max(Date.now(), sleep.untilMs ?? Date.now() + timing.idleMs), token);
    // A delivery made due while the job was still active could not wake it: look again.
    if (await store.dueBy(data.tenant, data.endpointId, Date.now())) await promoteJob(job);
    throw new DelayedError();
  }
}

/** How one delivery is attempted: signed, sent, and its outcome decided and recorded. */
function deliveryAttempt(options: PumpOptions): Attempt {
  const openSecret = secretOpener(options.secrets);
  const failure = retryPolicy(options.store.settings);
  return async (data, take, delivery) => {
    if (!take.enabled) return endAttempt(options, data, delivery, 'disabled');
    let result: ReturnType<typeof failure> | { outcome: 'delivered'; detail: { httpStatus: number } };
    let asked: AskedDecision | undefined;
    let decision: ApprovalDecisionBody | undefined;
    try {
      const secret = openSecret(take.secret);
      const token = delivery.token ? openSecret(delivery.token) : undefined;
      const body = token ? withAnswerToken(delivery.payload, token) : delivery.payload;
      const response = await options.send(take.url, {
        method: 'POST',
        headers: webhookHeaders(secret, delivery.messageId, body),
        body,
      });
      if (response.status >= 200 && response.status < 300) {
        asked = token === undefined ? undefined : askedToDecide(data.endpointId, delivery, token);
        // An approver's body may be its decision; any other is ignored (at most 64 KB of it is read,
        // to keep the connection).
        if (asked) decision = await decisionIn(response);
        else await response.discard();
        result = { outcome: 'delivered', detail: { httpStatus: response.status } };
      } else {
        const text = await response.text(ERROR_BODY_CHARS).catch(() => '');
        const start = text.replace(/\s+/g, ' ').trim().slice(0, ERROR_BODY_CHARS);
        result = failure(delivery, response.status, `HTTP ${response.status}${start ? `: ${start}` : ''}`);
      }
    } catch (error) {
      result = failure(delivery, undefined, describe(error));
    }
    // Taken before the attempt is recorded: a worker that dies in between sends it again, and the
    // token, used, refuses the second decision.
    if (asked) await takeDecision(options.decisions, options.log, data.endpointId, asked, decision);
    await endAttempt(options, data, delivery, result.outcome, result.detail);
  };
}

/** Opens sealed secrets, keeping the opened ones by their sealed form (a rotation seals a new one). */
function secretOpener(secrets: Sealer | undefined): (sealed: string) => string {
  const opened = new Map<string, string>();
  return (sealed) => {
    let secret = opened.get(sealed);
    if (secret === undefined) {
      if (!secrets)
        throw new Error('TETHER_SECRETS_KEY is not set on this worker: the signing secret cannot be opened');
      secret = secrets.open(sealed);
      if (opened.size >= 1_000) opened.clear();
      opened.set(sealed, secret);
    }
    return secret;
  };
}

/** A failed attempt: tried again after the backoff, unless that passes the delivery's age. */
function retryPolicy({ backoffMs, backoffMaxMs, maxAgeMs }: WebhookStore['settings']) {
  return (delivery: TakenDelivery, httpStatus: number | undefined, error: string) => {
    const attempts = delivery.attempts + 1;
    const nextAtMs = Date.now() + Math.min(backoffMs * 2 ** (attempts - 1), backoffMaxMs);
    const outcome: AttemptOutcome = nextAtMs - delivery.createdAt > maxAgeMs ? 'failed' : 'retrying';
    return { outcome, detail: { httpStatus, error, nextAtMs } };
  };
}

/**
 * Ends an attempt of a delivery (or the delivery, not sent): the one place its outcome is
 * recorded, and counted.
 */
async function endAttempt(
  options: PumpOptions,
  data: PumpJobData,
  delivery: TakenDelivery,
  outcome: AttemptOutcome,
  detail: {
    httpStatus?: number | undefined;
    error?: string | undefined;
    nextAtMs?: number | undefined;
  } = {},
): Promise<void> {
  const { store, log } = options;
  options.onOutcome?.(outcome, data.tenant);
  const { disabled } = await store.settle(data.tenant, data.endpointId, delivery, { outcome, ...detail });
  if (outcome !== 'delivered') {
    log.info(
      { endpointId: data.endpointId, deliveryId: delivery.id, runId: delivery.runId, outcome, ...detail },
      'webhook attempt did not deliver',
    );
  }
  if (disabled) {
    log.warn(
      { tenant: data.tenant, endpointId: data.endpointId },
      'webhook endpoint disabled: it failed for too long',
    );
  }
}

/** An attempt's error for the log: the outbound rules' own message, or the connection's. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`.slice(0, 300);
}
