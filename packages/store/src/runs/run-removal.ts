import type { StoreContext } from '../redis/store-context.js';
import { indexKeys } from './records.js';

/** Removing ended runs' keys: what `DELETE /v1/sessions/:id` does for the session's runs. */

/**
 * Unlinks every key of the runs (all in one hash slot: a session's, or a crew
 * tree's), then takes them out of the tenant's
 * indexes (its list, and its metadata's, read from the runs first).
 */
export async function unlinkRuns(
  ctx: StoreContext,
  tenant: string,
  runIds: readonly string[],
): Promise<void> {
  if (runIds.length === 0) return;
  const metadata = await ctx.redis.mget(...runIds.map((runId) => ctx.keys.run(runId).metadata));
  const indexes = new Map<string, string[]>();
  for (const [i, json] of metadata.entries()) {
    for (const key of indexKeys(ctx, tenant, json ? JSON.parse(json) : undefined)) {
      indexes.set(key, [...(indexes.get(key) ?? []), runIds[i] as string]);
    }
  }
  const owned: string[] = [];
  for (const runId of runIds) {
    const run = ctx.keys.run(runId);
    owned.push(run.record, run.checkpoint, run.spec, run.metadata, run.events, run.turn);
    owned.push(run.children, run.inbox, run.waitpoint, run.waitpointResults, run.webhookHint, run.files);
    // The keys of the waits before the waitpoint (a run of an earlier release); its questions'
    // hashes expire on their own.
    owned.push(run.legacy.pending, run.legacy.delegation, run.legacy.toolCalls, run.legacy.toolOutputs);
  }
  // One slot: one command per 500 keys.
  for (let i = 0; i < owned.length; i += 500) await ctx.redis.unlink(...owned.slice(i, i + 500));
  // Every index is in the tenant's slot: one round trip.
  const pipeline = ctx.redis.pipeline();
  for (const [key, ids] of indexes) pipeline.zrem(key, ...ids);
  for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
}
