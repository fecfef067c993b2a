import type { RedisClient } from './connection.js';
import type { TetherKeys } from './keys.js';

/** What every part of the run store works with: the connection, the key names and the store's limits. */
export interface StoreContext {
  readonly redis: RedisClient;
  readonly keys: TetherKeys;
  /** Events kept per run (approximate, `XADD MAXLEN ~`). */
  readonly eventMaxLength: number;
  /** How long an ended run's keys stay, in seconds. */
  readonly retentionSeconds: number;
  readonly sessionTtlSeconds: number;
}

/**
 * What a run that just went to sleep reads to know whether it should not have: a field of what it
 * waits on (`key`, on the run's slot) and whether a cancel was requested, in one round trip. The
 * worker was still moving its job to delayed meanwhile, and neither the awaited change nor a cancel
 * could wake a job that was still active.
 */
export async function readWake(
  ctx: StoreContext,
  runId: string,
  key: string,
  field: string,
): Promise<{ value: string | null; cancel: boolean }> {
  const replies = await ctx.redis
    .pipeline()
    .hget(key, field)
    .hget(ctx.keys.run(runId).record, 'cancelRequested')
    .exec();
  const [value, cancel] = (replies ?? []).map(([error, reply]) => {
    if (error) throw error;
    return reply as string | null;
  });
  return { value: value ?? null, cancel: Boolean(cancel) };
}
