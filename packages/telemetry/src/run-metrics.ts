import { idTime } from '@tether/protocol';
import type { EndedRun } from '@tether/store/runs';
import { Counter, Histogram, type Registry } from 'prom-client';

/** Buckets of a run's duration from its submission to its end, in seconds (1 s to 2 h). */
const RUN_SECONDS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200];

/**
 * `tether_runs_finished_total{status}` and `tether_run_duration_seconds` (from
 * the run's submission, read from its id, to its end), observed from
 * `RunStore`'s `onEnded`: a run is counted once, by the process that ended it
 * (a worker, or an API for a run cancelled while queued or waiting). With
 * `tenantLabel` both carry `tenant` too.
 */
export class RunEndMetrics {
  readonly finished: Counter<string>;
  readonly duration: Histogram<string>;
  readonly #tenantLabel: boolean;

  constructor(registry: Registry, options: { tenantLabel: boolean }) {
    this.#tenantLabel = options.tenantLabel;
    const tenant = options.tenantLabel ? ['tenant'] : [];
    this.finished = new Counter({
      name: 'tether_runs_finished_total',
      help: 'Runs ended by this process, by final status: completed, failed, cancelled, expired.',
      labelNames: ['status', ...tenant],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'tether_run_duration_seconds',
      help: 'Runs ended by this process: time from submission to the end (queue and waits included).',
      labelNames: tenant,
      buckets: RUN_SECONDS,
      registers: [registry],
    });
  }

  /** For `RunStore`'s `onEnded`. */
  readonly ended = (run: EndedRun): void => {
    const tenant = this.#tenantLabel ? { tenant: run.tenant } : {};
    this.finished.inc({ status: run.status, ...tenant });
    const createdAt = idTime(run.runId);
    if (createdAt !== undefined) this.duration.observe(tenant, Math.max(0, Date.now() - createdAt) / 1000);
  };
}
