/**
 * Whether this worker runs as it should, for the API's `/readyz`: the
 * sandbox its start's check found, and the parts that run with less than
 * they should (`degraded`), each with its cause and its fix. A degraded
 * worker still takes jobs: `/readyz` shows it, the worker says it once in its
 * log, and `tether_sandbox_mode` in its metrics.
 */
import type { SpawnerFailure } from '@tether/tools';
import type { Logger } from 'pino';
import type { WorkerMetrics } from './metrics.js';
import { logSandboxReport, type SandboxReport, sandboxDegraded } from './sandbox-report.js';

/** A part of the worker that runs with less than it should. */
export interface WorkerProblem {
  /** `sandbox`: bash runs unsandboxed or is refused; `spawner`: commands start from the worker itself. */
  part: 'sandbox' | 'spawner';
  cause: string;
  fix: string;
}

/** What the worker publishes in the workers hash, besides its sandbox report. */
export interface WorkerStatus {
  status: 'ok' | 'degraded';
  /** Present when degraded. */
  problems?: WorkerProblem[];
}

/** What the spawner's failure costs, and what brings it back. */
const SPAWNER_FIX =
  'the worker spawns each command itself, blocking its event loop for each start (about 10 ms); make `perl -MPOSIX -e 1` work on the host (perl-base), then restart the worker';

/** Collects what the worker runs with: told by its parts, read by whoever publishes it. */
export class WorkerReadiness {
  readonly #logger: Logger;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #problems = new Map<WorkerProblem['part'], WorkerProblem>();

  constructor(options: { logger: Logger; metrics?: WorkerMetrics | undefined }) {
    this.#logger = options.logger;
    this.#metrics = options.metrics;
  }

  /** The start's sandbox check is done: said once in the log, set in the metrics, degraded if less than meant. */
  sandboxChecked(report: SandboxReport): void {
    logSandboxReport(this.#logger, report);
    this.#metrics?.sandboxMode(report.effective);
    if (sandboxDegraded(report)) {
      this.#problems.set('sandbox', {
        part: 'sandbox',
        cause: report.reason ?? 'bubblewrap cannot build the sandbox',
        fix: report.fix ?? 'see docs/deploy.md',
      });
    }
  }

  /** The command spawner failed at its start and is off for the process's life: said once, at warn. */
  spawnerFailed(failure: SpawnerFailure): void {
    if (this.#problems.has('spawner')) return;
    this.#problems.set('spawner', { part: 'spawner', cause: failure.cause, fix: SPAWNER_FIX });
    this.#logger.warn(
      { cause: failure.cause, fix: SPAWNER_FIX },
      `${failure.cause}; it is off until the worker restarts: ${SPAWNER_FIX}`,
    );
  }

  /** `ok`, or `degraded` with what is wrong. */
  status(): WorkerStatus {
    const problems = [...this.#problems.values()];
    return problems.length === 0 ? { status: 'ok' } : { status: 'degraded', problems };
  }
}
