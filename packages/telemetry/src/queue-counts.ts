import type { Lease } from '@tether/store/leases';
import { Gauge, type Registry } from 'prom-client';

/** BullMQ job states, as `getJobCounts` names them: those of `tether_queue_jobs{state}`. */
export const JOB_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'waiting-children'] as const;

export interface ElectedQueueCountsOptions {
  /** The lease of the one process that reads the counts (`keys.queueMetricsLease`), started by the caller. */
  lease: Lease;
  /** Resolves once the lease has been looked at a first time (`lease.start()`): a first scrape waits for it. */
  started?: Promise<unknown> | undefined;
  /** Reads the counts of every shard, added up (`RunService.jobCounts(...JOB_STATES)`). */
  read: () => Promise<Record<string, number>>;
  /** False while Redis is known to be unreachable: nothing is read then. Default always true. */
  available?: () => boolean;
  /** Told when a read failed (the gauges are left out of that scrape). */
  onError?: (error: unknown) => void;
}

/**
 * The queue's counts, read from Redis by one process of the deployment: the
 * holder of the lease. Every other process answers undefined, and leaves
 * the gauges built on it out of its scrape, so that the queue is read once
 * per scrape interval, not once per process. One read serves every gauge of
 * one scrape.
 */
export class ElectedQueueCounts {
  readonly #options: ElectedQueueCountsOptions;
  #current: Promise<Record<string, number> | undefined> | undefined;

  constructor(options: ElectedQueueCountsOptions) {
    this.#options = options;
  }

  /** Whether this process reads the counts (it held the lease at its last look). */
  get elected(): boolean {
    return this.#options.lease.held;
  }

  /** The counts when this process holds the lease and Redis answers; undefined otherwise. */
  async current(): Promise<Record<string, number> | undefined> {
    const { lease, read, available, onError, started } = this.#options;
    await started;
    if (!lease.held || (available && !available())) return undefined;
    this.#current ??= read()
      .catch((error: unknown) => {
        onError?.(error);
        return undefined;
      })
      .finally(() => {
        // Shared by the gauges collected in this scrape only.
        setImmediate(() => {
          this.#current = undefined;
        });
      });
    return this.#current;
  }
}

/** `tether_queue_jobs{state}` in `registry`, from the elected reader's counts (absent elsewhere). */
export function queueJobsGauge(registry: Registry, counts: ElectedQueueCounts): Gauge<'state'> {
  return new Gauge({
    name: 'tether_queue_jobs',
    help: 'Jobs of the runs queue (every shard) by BullMQ state, read at scrape by the one process of the deployment that holds the queue-reader lease (absent from the others).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const current = await counts.current();
      if (!current) return;
      for (const state of JOB_STATES) this.set({ state }, current[state] ?? 0);
    },
  });
}
