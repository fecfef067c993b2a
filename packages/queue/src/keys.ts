/**
 * Every Redis key Tether uses, in one place. Two families:
 *
 * - BullMQ's keys, under the queue prefix (default `{tether}`): the braces are a
 *   Redis Cluster hash tag, so all of BullMQ's keys share one slot, as its Lua
 *   scripts require.
 * - Per-run keys, hash-tagged by run id (`tether:run:{run_…}:…`): a run's
 *   record, checkpoint, event log and clarify requests share a slot, so the Lua
 *   scripts that touch several of them (append an event and change the record
 *   in one step) work on a cluster too. No script mixes the two families.
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
  /** String: the submitted body (JSON), until the run ends. */
  spec: string;
  /** String: the question the run waits on (JSON), while it waits. */
  pending: string;
  /** String: the caller's metadata (JSON), when given. */
  metadata: string;
  /** Stream: the run's event log. */
  events: string;
  /** Hash per clarify request: question, status, answer, expiry. */
  clarify(requestId: string): string;
  /** Pub/sub channel: new events of this run (the event JSON). */
  eventsChannel: string;
}

export interface TetherKeys {
  /** The BullMQ prefix, a hash tag such as `{tether}`. */
  queuePrefix: string;
  /** The namespace of Tether's own keys, the prefix without braces (`tether`). */
  namespace: string;
  run(runId: string): RunKeys;
  /** Sorted set (all scores 0, members ordered by id): a tenant's runs. */
  tenantRuns(tenant: string): string;
  /** String: idempotency key of a tenant → `runId hash`. */
  idempotency(tenant: string, key: string): string;
  /** Pub/sub channel: cancel requests (the run id), heard by every worker. */
  cancelChannel: string;
  /** The pattern of every run's events channel. */
  eventsPattern: string;
  /**
   * Hash: worker id → what its sandbox is (JSON with `at`, epoch ms), written
   * by each worker at start and every few seconds; `/readyz` reports it.
   */
  workers: string;
}

/** The queue's name inside the prefix. */
export const QUEUE_NAME = 'runs';

const PREFIX = /^[A-Za-z0-9_:{}.-]{1,64}$/;

/** Builds the key names for a queue prefix such as `{tether}`. */
export function createKeys(queuePrefix = '{tether}'): TetherKeys {
  if (!PREFIX.test(queuePrefix)) {
    throw new RangeError(
      `queue prefix must be 1 to 64 characters of letters, digits and _:{}.- (got ${JSON.stringify(queuePrefix)})`,
    );
  }
  const namespace = queuePrefix.replace(/[{}]/g, '') || 'tether';
  return {
    queuePrefix,
    namespace,
    run(runId) {
      const base = `${namespace}:run:{${runId}}`;
      return {
        record: base,
        checkpoint: `${base}:checkpoint`,
        spec: `${base}:spec`,
        pending: `${base}:pending`,
        metadata: `${base}:metadata`,
        events: `${base}:events`,
        clarify: (requestId) => `${base}:clarify:${requestId}`,
        eventsChannel: `${namespace}:events:${runId}`,
      };
    },
    tenantRuns: (tenant) => `${namespace}:tenant:{${tenant}}:runs`,
    idempotency: (tenant, key) => `${namespace}:tenant:{${tenant}}:idem:${key}`,
    cancelChannel: `${namespace}:cancel`,
    eventsPattern: `${namespace}:events:*`,
    workers: `${namespace}:{workers}`,
  };
}
