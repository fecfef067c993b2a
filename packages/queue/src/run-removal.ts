import * as eventLog from './event-log.js';
import { indexKeys } from './records.js';
import type { StoreContext } from './store-context.js';

/**
 * Removing ended runs' keys: what `DELETE /v1/sessions/:id` does for the
 * session's runs. The clarify requests' keys are named by the runs' events
 * (`clarify.requested`), read before the keys go.
 */

/** Every clarify request of the runs, from their events (`clarify.requested`). */
export async function clarifyRequests(
  ctx: StoreContext,
  runIds: readonly string[],
): Promise<[runId: string, requestId: string][]> {
  const found: [string, string][] = [];
  for (const runId of runIds) {
    for (let after = '0'; ; ) {
      const events = await eventLog.readEvents(ctx, runId, after, 1_000);
      for (const event of events) {
        if (event.type === 'clarify.requested') found.push([runId, event.data.requestId]);
      }
      if (events.length < 1_000) break;
      after = (events.at(-1) as { id: string }).id;
    }
  }
  return found;
}

/**
 * Unlinks every key of the runs (all in one hash slot: a session's, or a crew
 * tree's) and their clarify requests, then takes them out of the tenant's
 * indexes (its list, and its metadata's, read from the runs first).
 */
export async function unlinkRuns(
  ctx: StoreContext,
  tenant: string,
  runIds: readonly string[],
  requestIds: readonly (readonly [runId: string, requestId: string])[],
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
    owned.push(run.record, run.checkpoint, run.spec, run.pending, run.metadata, run.events, run.turn);
    owned.push(run.children, run.delegation, run.toolCalls, run.toolOutputs, run.webhookHint, run.files);
  }
  for (const [runId, requestId] of requestIds) owned.push(ctx.keys.run(runId).clarify(requestId));
  // One slot: one command per 500 keys.
  for (let i = 0; i < owned.length; i += 500) await ctx.redis.unlink(...owned.slice(i, i + 500));
  // Every index is in the tenant's slot: one round trip.
  const pipeline = ctx.redis.pipeline();
  for (const [key, ids] of indexes) pipeline.zrem(key, ...ids);
  for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
}
