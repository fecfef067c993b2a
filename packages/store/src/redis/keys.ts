import { createHash } from 'node:crypto';
import { runSessionTag, runTreeTag, sessionTag } from '@tether/protocol';

/**
 * Every Redis key Tether uses, in one place. Two families:
 *
 * - BullMQ's keys, under the queue prefix (default `{tether}`): the braces are a
 *   Redis Cluster hash tag, so all of BullMQ's keys share one slot, as its Lua
 *   scripts require.
 * - Per-run keys, hash-tagged by run id (`tether:run:{run_…}:…`): a run's
 *   record, checkpoint, event log and waitpoint share a slot, so the Lua
 *   scripts that touch several of them (append an event and change the record
 *   in one step) work on a cluster too. No script mixes the two families.
 * - Per-session keys, hash-tagged by the session's random part
 *   (`tether:ses:{s_…}…`). A session's runs keep their keys under the same tag
 *   (their ids end with it, see `newSessionRunId`), so the step that ends a run
 *   also appends its turn to the session's transcript, and the step that claims
 *   it checks that no other run of the session is ahead of it.
 * - A crew tree (a run and the children it delegates to, and theirs) keeps
 *   every run's keys in its root's hash slot: a child's id ends with the
 *   root's tag (see `newChildRunId`), so the step that ends a child records
 *   its result in its parent's delegation.
 * - Per memory scope, hash-tagged by tenant and scope (`tether:mem:{m_…}:…`):
 *   a scope's entries, order, digests, version and change log share a slot.
 */
export interface RunKeys {
  /**
   * Hash: the run record (status, times, owner token, output, error, …). Its
   * values stay short (<= 64 bytes while the run is live) so Redis keeps it in
   * the compact listpack encoding; longer values live in keys of their own.
   */
  record: string;
  /** String: the agent checkpoint (JSON). */
  checkpoint: string;
  /**
   * String: the submitted body (JSON), until the run ends; a failed or cancelled run's stays
   * for the retention, for a retry (`POST /v1/runs/:id/retry`).
   */
  spec: string;
  /**
   * String: the submitted files (JSON), moved out of the spec once the worker has written them
   * into the workspace; kept, like the spec, while the run is live and after it failed or was
   * cancelled, so that a retry starts from them again.
   */
  files: string;
  /** String: the caller's metadata (JSON), when given. */
  metadata: string;
  /** Stream: the run's event log. */
  events: string;
  /** Pub/sub channel: new events of this run (the event JSON). */
  eventsChannel: string;
  /**
   * List: a session run's turn so far, as transcript entries (JSON each),
   * rewritten with each checkpoint and moved into the session's transcript
   * when the run ends.
   */
  turn: string;
  /**
   * The keys of the run's session. A run of no session gets keys in its own
   * hash slot that no script writes (the scripts that take them check the
   * record's `session` field first), so every script has one signature.
   */
  session: SessionKeys;
  /**
   * The keys of the run's batch (`POST /v1/batches`), in its hash slot: a run of no batch gets keys
   * that no script writes (the step that ends a run checks the record's `batch` field first).
   */
  batch: BatchKeys;
  /** List: the ids of the crew children the run started over its life, in order. */
  children: string;
  /**
   * List: the messages sent to the live run (`POST /v1/runs/:id/messages`, JSON each) that it has
   * not taken yet, oldest first; the save that puts them in the transcript trims them, and the
   * run's end drops what is left (each one `message.undelivered`).
   */
  inbox: string;
  /**
   * Hash: the waitpoint the run waits on (one at a time), and what is left of earlier ones. Its
   * `id` (the question's request id, the first client tool call's, or the delegation's key), the
   * `kind` of its requests (`question`, `tool_output` or `child`), its `deadline` (epoch ms), how
   * many requests are not resolved yet (`pending`), and per request its state (`s:<id>`: `pending`,
   * then `answered`, `received`, `reported` or `timed_out`) and the id of its event in the run's log
   * (`e:<id>`: the event's data is the request; `q:<id>` holds the request itself for a run moved
   * from the release before the waitpoint); webhook answer tokens are `t:<requestId>:<hash>`, the
   * first 24 hex digits of the token's SHA-256 (`ok`, then `used`). Its values stay short, so Redis keeps it compact; the results are a key beside it.
   * A new waitpoint, and the run's end, keep only the states and tokens of the earlier requests, so
   * a late answer is told its fate.
   */
  waitpoint: string;
  /**
   * Hash: how the requests of the run's waitpoint were resolved, by request id: the answer, the
   * output as JSON `{ output, isError }`, or the child's result as JSON.
   */
  waitpointResults: string;
  /**
   * The keys of the three waits before the waitpoint (a question's `pending` string and
   * `clarify:<id>` hash, the `tool-calls` and `tool-outputs` hashes, the `delegation` hash): read
   * only to move a run that waits across the upgrade (`migrateWaitpoints`) and deleted with the
   * run. To be removed one release after the waitpoint.
   */
  legacy: {
    pending: string;
    clarify(requestId: string): string;
    delegation: string;
    toolCalls: string;
    toolOutputs: string;
  };
  /**
   * String: where the next look at the run's event log for webhook deliveries starts (an event
   * id all of whose deliveries are recorded). It may lag the tenant's cursor, never lead it.
   */
  webhookHint: string;
  /**
   * A key in the run's hash slot that nothing writes: what a script gets for
   * a key it has no use for (the parent of a run that is no crew child).
   */
  unused: string;
}

/** The keys of one session, all under the session's hash tag. */
/** A batch's keys (`POST /v1/batches`). */
export interface BatchKeys {
  /** Hash: id, tenant, total, ended (runs that have ended), createdAt, completedAt, metadata (JSON). */
  record: string;
  /** List: the batch's run ids, in the order they were given. */
  runs: string;
}

export interface SessionKeys {
  /** Hash: id, tenant, times (epoch ms), run count, last run, defaults and metadata (JSON). */
  record: string;
  /** List: every run id of the session, in order. */
  runs: string;
  /** List: the session's live runs in order; the head is the one that may execute. */
  queue: string;
  /** List: the transcript, one entry (JSON) per element, in order. */
  transcript: string;
  /** String: the files (JSON) to write into the workspace before the first run. */
  files: string;
  /** Pub/sub channel: the id of each run added to the session. */
  runsChannel: string;
}

/**
 * The keys of a tenant's cap on runs executing at once (`TETHER_TENANT_MAX_RUNNING`), all under
 * the tenant's hash tag, so one script takes, renews or releases a slot on a cluster too.
 */
export interface TenantSlotKeys {
  /** Sorted set: run id → its slot's lease expiry (epoch ms, Redis's clock). Its size is the slots taken. */
  running: string;
  /** Hash: run id → the fencing token of the attempt holding its slot (`''` while handed to a waiting run). */
  holders: string;
  /** Sorted set: run id → when it first waited for a slot (epoch ms): the runs over the cap, oldest first. */
  parked: string;
}

/**
 * The keys of a tenant's usage ledger and budgets, all under the tenant's hash tag, so the step
 * that records a turn's usage and the read of a tenant's totals each touch one slot.
 */
export interface TenantUsageKeys {
  /**
   * Hash per UTC day (`YYYY-MM-DD`): the tenant's totals (`in`, `out`, `tot`, `usd` in
   * micro-dollars, `runs`) and the same per profile, model and metadata value (`p:<profile>:<total>`,
   * `m:<model>:<total>`, `k:<JSON [key, value]>:<total>`). Expires `BUDGET_LIMITS.ledgerTtlDays`
   * after its last write.
   */
  day(day: string): string;
  /** Hash per UTC month (`YYYY-MM`): the tenant's totals only, for its monthly budgets. */
  month(month: string): string;
  /** String (expiring with its period): set once the tenant was warned of `budget` (`day:tokens`…) in `period`. */
  warned(period: string, budget: string): string;
  /** String: the tenant's budgets set with `PUT /v1/budgets` (JSON). */
  budgets: string;
}

/**
 * The keys of one memory scope of a tenant, all under the scope's hash tag
 * (`{m_<tenant>:<scope>}`), so every script on a scope touches one slot.
 */
export interface MemoryKeys {
  /** Hash: entry id → the entry (JSON: id, content, tags, createdAt, updatedAt in epoch ms). */
  entries: string;
  /** Sorted set: entry ids scored by the time of their last save (epoch ms), for recency. */
  order: string;
  /** Hash: SHA-1 of an entry's content → its id, to refuse exact duplicates. */
  digests: string;
  /** Hash: `version` (one more per change, never reset), `bytes` (the entries' JSON) and `last` (the latest save's time: saves get later times, strictly). */
  meta: string;
  /** List: the ids changed, newest first (`*`: every entry), the last 256: what a cache at an older version lacks. */
  log: string;
}

/** The keys of one tenant's skills, all under the tenant's hash tag `{k_<tenant>}`. */
export interface SkillKeys {
  /** Hash: skill name → its summary (JSON: description, pinned, version, bytes, files, createdAt, updatedAt). */
  index: string;
  /** Hash: `version` (INCRed by every change of any skill of the tenant) and `bytes` (of every file). */
  totals: string;
  /** Hash per skill: path inside the skill → content. */
  files(name: string): string;
}

/**
 * The keys of one tenant's webhooks, all under the tenant's hash tag `{w_<tenant>}`, so the step
 * that records a run's deliveries for every endpoint, and each step of an endpoint's pump, is one
 * script on one slot. Keys that name an id end with it: the scripts take the part before the id
 * (`delivery('')`, `chain(runId, '')`, …) and append the id, as BullMQ's scripts do with job ids.
 */
export interface WebhookKeys {
  /** Sorted set: the tenant's endpoint ids, scored by creation (epoch ms). */
  endpoints: string;
  /**
   * Hash per endpoint: `url`, `events` (space-separated), `description`, `secret` (sealed),
   * `createdAt`, `enabled` (1 or 0), `disabledAt`, `disabledReason`, `failingSince`, and `pump`
   * (the lease of its pump's activation, epoch ms; 0 while it sleeps).
   */
  endpoint(endpointId: string): string;
  /** Sorted set: the endpoint's deliveries to try (only the head of each run's chain), scored by when (epoch ms). */
  due(endpointId: string): string;
  /** Sorted set: the deliveries its pump is trying now, scored by when taken. */
  inflight(endpointId: string): string;
  /** Sorted set: the endpoint's delivery log, scored by creation (epoch ms), trimmed by count and age. */
  log(endpointId: string): string;
  /**
   * Hash per delivery: `endpoint`, `runId`, `eventId`, `type`, `message` (the message id),
   * `payload` (JSON), `token` (a sealed answer token, or none), `status`, `attempts`,
   * `lastStatus`, `lastError`, `lastAttemptAt`, `nextAttemptAt`, `createdAt`, `finishedAt`,
   * `redeliveryOf`.
   */
  delivery(deliveryId: string): string;
  /** List: a run's deliveries to an endpoint that have not ended, in event order; the head is the one tried. */
  chain(runId: string, endpointId: string): string;
  /** String: the id of the last event of a run whose deliveries are recorded (the dispatch cursor). */
  cursor(runId: string): string;
  /**
   * Sorted set: runs an API step is about to append events to, scored by when (epoch ms):
   * dispatched by the step's process just after, or by the sweeper if that process died.
   */
  dirty: string;
}

/**
 * The keys of one tenant's schedules, all under the tenant's hash tag, so the script that adds one
 * checks the tenant's limit and its name in one step, on a cluster too.
 */
export interface ScheduleKeys {
  /** Hash: schedule name → the schedule (JSON: its timing, policies, the run's spec, times in epoch ms). */
  index: string;
  /** Hash per schedule: `lastRunId`, `lastRunAt`, `lastSkippedAt` (epoch ms), written by the firings. */
  state(name: string): string;
  /** Sorted set per schedule: the ids of the runs it made, scored by their tick (epoch ms). */
  runs(name: string): string;
}

export interface TetherKeys {
  /** The BullMQ prefix, a hash tag such as `{tether}`: the prefix of the only shard when there is one. */
  queuePrefix: string;
  /** How many BullMQ queues (shards) the runs are spread over (`TETHER_QUEUE_SHARDS`). */
  shards: number;
  /**
   * The BullMQ prefix of shard `shard`: `queuePrefix` itself with one shard;
   * with several, `{<namespace>:<shard>}` (`{tether:0}`, `{tether:1}`, …), each
   * its own hash tag, so a cluster spreads the shards over its masters.
   */
  shardPrefix(shard: number): string;
  /** The shard a new run goes to: a stable hash of its id (FNV-1a), modulo the shard count. */
  shardOf(runId: string): number;
  /** The namespace of Tether's own keys, the prefix without braces (`tether`). */
  namespace: string;
  run(runId: string): RunKeys;
  session(sessionId: string): SessionKeys;
  /** The keys of a batch: in one hash slot with its runs' (their ids carry its tag). */
  batch(batchId: string): BatchKeys;
  /** The keys of a tenant's memory scope. */
  memory(tenant: string, scope: string): MemoryKeys;
  /** Sorted set (all scores 0, members ordered by id): a tenant's sessions. */
  tenantSessions(tenant: string): string;
  /** Sorted set (all scores 0, members ordered by id): a tenant's runs. */
  tenantRuns(tenant: string): string;
  /**
   * Sorted set (all scores 0, members ordered by id): a tenant's runs whose metadata has `key`
   * set to the string `value` (`GET /v1/runs?metadata.<key>=<value>`), written at create beside
   * {@link tenantRuns}, in the same hash slot. The pair is hashed into the name (SHA-1), so any
   * key and value make a key of bounded length.
   */
  tenantRunsByMetadata(tenant: string, key: string, value: string): string;
  /** The slots of a tenant's cap on runs executing at once (`TETHER_TENANT_MAX_RUNNING`). */
  tenantSlots(tenant: string): TenantSlotKeys;
  /** String: idempotency key of a tenant → `runId hash`. */
  idempotency(tenant: string, key: string): string;
  /** Pub/sub channel: cancel requests (the run id), heard by every worker. */
  cancelChannel: string;
  /**
   * Sorted set: the runs a process is ending as cancelled outside an attempt (the API's cancel, a
   * parent's end cancelling its children), scored by when it began (epoch ms): a worker finishes
   * one left there by a process that died (`RunService.recoverCancels`). Hash tag `{cancels}`.
   */
  cancelsInFlight: string;
  /**
   * Sorted set: the runs given a deadline to start by (`expiresAt`), scored by it (epoch ms), for
   * the expiry sweep (`RunEngine.expireDue`). Only such runs are added; each leaves it once the
   * sweep has seen its deadline pass. Hash tag `{expiries}`.
   */
  runExpiries: string;
  /** String: the expiry sweep's lease (see `Lease`), so one process sweeps at a time. */
  expirySweepLease: string;
  /** The pattern of every run's events channel. */
  eventsPattern: string;
  /**
   * String (expiring, see `SharedPrompts`): a part of system prompts that many runs share, by
   * `ref`, its SHA-256 (base64url); their checkpoints name it instead of holding it.
   */
  sharedPrompt(ref: string): string;
  /**
   * Hash: worker id → what its sandbox is (JSON with `at`, epoch ms), written
   * by each worker at start and every few seconds; `/readyz` reports it.
   */
  workers: string;
  /**
   * String (integer, expiring after its window): the requests every API
   * instance counted for a rate-limit key (`tenant:acme`, `ip:…`, per route)
   * in fixed window number `window` of `windowMs`. Every counter shares one
   * hash tag (`{ratelimit}`), so an API instance adds its counts of every key
   * in one pipeline, on a cluster too.
   */
  rateLimit(key: string, windowMs: number, window: number): string;
  /**
   * String (expiring): the id of the one process that reads the queue's counts for the
   * `tether_queue_jobs` metric, under a lease it renews (see `Lease`), so that every API and
   * worker process of a deployment does not read them at each scrape. Hash tag `{metrics}`.
   */
  queueMetricsLease: string;
  /**
   * A tenant's skills (`tether:skills:{k_<tenant>}:…`): one hash slot per
   * tenant, so a write checks the tenant's limits and keeps its index and
   * totals in one script, on a cluster too.
   */
  skills(tenant: string): SkillKeys;
  /**
   * Hash: the MCP servers a tenant registered, name → the server (JSON: url,
   * sealed headers, header names, allowed tools, times in epoch ms), under the
   * tenant's hash tag.
   */
  mcpServers(tenant: string): string;
  /**
   * String: the tenant's default approval policy (JSON), which a run with no policy of its own (nor
   * of its session's defaults) takes at submit, under the tenant's hash tag.
   */
  approvalPolicy(tenant: string): string;
  /** Pub/sub channel: a tenant whose default approval policy changed (every process drops its copy). */
  approvalPolicyChannel: string;
  /** A tenant's usage ledger and budgets (`tether:tenant:{<tenant>}:usage:…`). */
  tenantUsage(tenant: string): TenantUsageKeys;
  /** Pub/sub channel: a tenant whose budgets changed (every process drops its copy). */
  tenantBudgetsChannel: string;
  /** A tenant's webhooks (`tether:wh:{w_<tenant>}:…`). */
  webhooks(tenant: string): WebhookKeys;
  /** Set: the tenants that have had an endpoint (the sweeper looks at their `dirty` runs). */
  webhookTenants: string;
  /** String: the sweeper's lease, so one process sweeps at a time. */
  webhookSweepLock: string;
  /** Pub/sub channel: a tenant whose endpoints changed (every process drops its copy). */
  webhooksChannel: string;
  /** The BullMQ prefix of the webhooks queue (one pump job per endpoint), a hash tag of its own. */
  webhookQueuePrefix: string;
  /** A tenant's schedules (`tether:tenant:{<tenant>}:schedule…`). */
  schedules(tenant: string): ScheduleKeys;
  /**
   * The BullMQ prefix of the schedules queue, a hash tag of its own: one job scheduler per schedule,
   * whose jobs (one per tick) the workers take to submit the runs.
   */
  scheduleQueuePrefix: string;
}

/** The schedules queue's name inside its prefix. */
export const SCHEDULE_QUEUE_NAME = 'schedules';

/** The webhooks queue's name inside its prefix. */
export const WEBHOOK_QUEUE_NAME = 'webhooks';

/** The queue's name inside the prefix. */
export const QUEUE_NAME = 'runs';

const PREFIX = /^[A-Za-z0-9_:{}.-]{1,64}$/;

/** The most shards a deployment may have. */
export const MAX_SHARDS = 64;

/** Builds the key names for a queue prefix such as `{tether}` and a number of queue shards. */
export function createKeys(queuePrefix = '{tether}', shards = 1): TetherKeys {
  if (!PREFIX.test(queuePrefix)) {
    throw new RangeError(
      `queue prefix must be 1 to 64 characters of letters, digits and _:{}.- (got ${JSON.stringify(queuePrefix)})`,
    );
  }
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new RangeError(`queue shards must be an integer from 1 to ${MAX_SHARDS} (got ${shards})`);
  }
  const namespace = queuePrefix.replace(/[{}]/g, '') || 'tether';
  const sessionBase = (tag: string) => `${namespace}:ses:{s_${tag}}`;
  /** The keys of the batch with this tag (a batch's tag is made as a session's: see `newBatchRunId`). */
  const batchKeys = (tag: string): BatchKeys => ({
    record: `${sessionBase(tag)}:batch`,
    runs: `${sessionBase(tag)}:batch:runs`,
  });
  /** The keys of the session with this tag; a run of no session passes its own unused place instead. */
  const sessionKeys = (tag: string, base = sessionBase(tag)): SessionKeys => ({
    record: base,
    runs: `${base}:runs`,
    queue: `${base}:queue`,
    transcript: `${base}:transcript`,
    files: `${base}:files`,
    runsChannel: `${namespace}:session-runs:${tag}`,
  });
  return {
    queuePrefix,
    shards,
    shardPrefix(shard) {
      if (!Number.isInteger(shard) || shard < 0 || shard >= shards) {
        throw new RangeError(`no queue shard ${shard}: there are ${shards} (0 to ${shards - 1})`);
      }
      return shards === 1 ? queuePrefix : `{${namespace}:${shard}}`;
    },
    shardOf: (runId) => (shards === 1 ? 0 : fnv1a(runId) % shards),
    namespace,
    run(runId) {
      const tag = runSessionTag(runId);
      const tree = runTreeTag(runId);
      // A session's run (and its crew tree) lives in its session's hash slot, a crew child
      // elsewhere in its root's, and any other run in its own.
      const base = tag
        ? `${sessionBase(tag)}:run:${runId}`
        : tree
          ? `${namespace}:run:{${tree}}:child:${runId}`
          : `${namespace}:run:{${runId}}`;
      return {
        record: base,
        checkpoint: `${base}:checkpoint`,
        spec: `${base}:spec`,
        files: `${base}:files`,
        metadata: `${base}:metadata`,
        events: `${base}:events`,
        eventsChannel: `${namespace}:events:${runId}`,
        turn: `${base}:turn`,
        children: `${base}:children`,
        inbox: `${base}:inbox`,
        waitpoint: `${base}:waitpoint`,
        waitpointResults: `${base}:waitpoint:results`,
        legacy: {
          pending: `${base}:pending`,
          clarify: (requestId) => `${base}:clarify:${requestId}`,
          delegation: `${base}:delegation`,
          toolCalls: `${base}:tool-calls`,
          toolOutputs: `${base}:tool-outputs`,
        },
        webhookHint: `${base}:webhook-hint`,
        unused: `${base}:unused`,
        session: tag ? sessionKeys(tag) : sessionKeys('none', `${base}:nosession`),
        batch: tag ? batchKeys(tag) : { record: `${base}:nobatch`, runs: `${base}:nobatch:runs` },
      };
    },
    session: (sessionId) => sessionKeys(sessionTag(sessionId)),
    batch: (batchId) => batchKeys(sessionTag(batchId)),
    memory(tenant, scope) {
      const base = `${namespace}:mem:{m_${tenant}:${scope}}`;
      return {
        entries: `${base}:entries`,
        order: `${base}:order`,
        digests: `${base}:digests`,
        meta: `${base}:meta`,
        log: `${base}:log`,
      };
    },
    tenantSessions: (tenant) => `${namespace}:tenant:{${tenant}}:sessions`,
    tenantRuns: (tenant) => `${namespace}:tenant:{${tenant}}:runs`,
    tenantRunsByMetadata: (tenant, key, value) =>
      `${namespace}:tenant:{${tenant}}:runs:meta:${createHash('sha1')
        .update(JSON.stringify([key, value]))
        .digest('hex')}`,
    tenantSlots: (tenant) => {
      const base = `${namespace}:tenant:{${tenant}}`;
      return { running: `${base}:running`, holders: `${base}:running:holders`, parked: `${base}:parked` };
    },
    idempotency: (tenant, key) => `${namespace}:tenant:{${tenant}}:idem:${key}`,
    cancelChannel: `${namespace}:cancel`,
    cancelsInFlight: `${namespace}:{cancels}`,
    runExpiries: `${namespace}:{expiries}`,
    expirySweepLease: `${namespace}:{expiries}:sweep`,
    eventsPattern: `${namespace}:events:*`,
    sharedPrompt: (ref) => `${namespace}:prompt:${ref}`,
    workers: `${namespace}:{workers}`,
    rateLimit: (key, windowMs, window) => `${namespace}:{ratelimit}:${key}:${windowMs}:${window}`,
    queueMetricsLease: `${namespace}:{metrics}:queue-reader`,
    skills(tenant) {
      const base = `${namespace}:skills:{k_${tenant}}`;
      return { index: `${base}:index`, totals: `${base}:totals`, files: (name) => `${base}:files:${name}` };
    },
    mcpServers: (tenant) => `${namespace}:tenant:{${tenant}}:mcp-servers`,
    approvalPolicy: (tenant) => `${namespace}:tenant:{${tenant}}:approval-policy`,
    approvalPolicyChannel: `${namespace}:approval-policy-changed`,
    tenantUsage(tenant) {
      const base = `${namespace}:tenant:{${tenant}}`;
      return {
        day: (day) => `${base}:usage:d:${day}`,
        month: (month) => `${base}:usage:m:${month}`,
        warned: (period, budget) => `${base}:budget-warned:${period}:${budget}`,
        budgets: `${base}:budgets`,
      };
    },
    tenantBudgetsChannel: `${namespace}:tenant-budgets-changed`,
    webhooks(tenant) {
      const base = `${namespace}:wh:{w_${tenant}}`;
      return {
        endpoints: `${base}:endpoints`,
        endpoint: (id) => `${base}:ep:${id}`,
        due: (id) => `${base}:due:${id}`,
        inflight: (id) => `${base}:inflight:${id}`,
        log: (id) => `${base}:log:${id}`,
        delivery: (id) => `${base}:d:${id}`,
        chain: (runId, endpointId) => `${base}:chain:${runId}:${endpointId}`,
        cursor: (runId) => `${base}:cursor:${runId}`,
        dirty: `${base}:dirty`,
      };
    },
    webhookTenants: `${namespace}:{webhooks}:tenants`,
    webhookSweepLock: `${namespace}:{webhooks}:sweep`,
    webhooksChannel: `${namespace}:webhooks-changed`,
    webhookQueuePrefix: `{${namespace}:webhooks}`,
    schedules: (tenant) => {
      const base = `${namespace}:tenant:{${tenant}}:schedule`;
      return {
        index: `${base}s`,
        state: (name) => `${base}:${name}:state`,
        runs: (name) => `${base}:${name}:runs`,
      };
    },
    scheduleQueuePrefix: `{${namespace}:schedules}`,
  };
}

/** FNV-1a, 32 bits: a stable, well-spread hash of a run id (the same in every process and version). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
