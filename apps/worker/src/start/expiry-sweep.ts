import { Lease } from '@tether/store/leases';
import type { RedisClient, TetherKeys } from '@tether/store/redis';
import type { RunEngine } from '@tether/store/runs';
import type { Logger } from 'pino';

/**
 * How often the expiry sweep looks for runs past their deadline to start by. A run nobody takes up
 * ends `expired` at most this long after its `expiresAt` (plus the sweep's own work), while the
 * lease's holder lives; when it dies, another worker takes the lease within its life (15 s) and
 * sweeps from then. (A run a worker takes up past its deadline ends at that claim, at once.)
 */
export const EXPIRY_SWEEP_MS = 1_000;

/** Runs one sweep ends at most per pass; a full pass is followed at once by another. */
const SWEEP_BATCH = 100;

/** The sweep of runs past their deadline, by the one worker of the deployment holding its lease. */
export interface ExpirySweep {
  stop(): Promise<void>;
}

/**
 * Every {@link EXPIRY_SWEEP_MS}, the worker holding the expiry lease ends `expired` the runs that
 * never started and are past their deadline (`RunEngine.expireDue`: each one engine step, idempotent,
 * so a lease held twice for a moment costs only a repeated look).
 */
export function startExpirySweep(options: {
  workerId: string;
  keys: TetherKeys;
  redis: RedisClient;
  engine: RunEngine;
  logger: Logger;
}): ExpirySweep {
  const { keys, redis, engine, logger } = options;
  const lease = new Lease({
    redis,
    key: keys.expirySweepLease,
    holder: `tether-worker:${options.workerId}`,
    onError: (error) => logger.debug({ err: error }, 'could not look at the expiry sweep lease'),
  });
  void lease.start();
  let sweeping = false;
  const sweep = async () => {
    if (sweeping || !lease.held) return;
    sweeping = true;
    try {
      for (let pass = 0; pass < 10; pass += 1) {
        const expired = await engine.expireDue(SWEEP_BATCH);
        if (expired.length > 0) logger.info({ runIds: expired }, 'runs expired before they started');
        if (expired.length < SWEEP_BATCH) break;
      }
    } catch (err) {
      logger.warn({ err }, 'could not sweep the runs past their deadline; the next sweep will');
    } finally {
      sweeping = false;
    }
  };
  const timer = setInterval(() => void sweep(), EXPIRY_SWEEP_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await lease.stop();
    },
  };
}
