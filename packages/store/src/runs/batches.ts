/**
 * Reading and cancelling a batch (`POST /v1/batches` makes one, `RunService.submitBatch`): its
 * record and its runs' ids are in one hash slot with the runs' own keys (their ids carry its tag),
 * so reading every run's status is one pipeline to one node.
 */
import { BATCH_LIMITS, type Batch, type RunStatus, TERMINAL_STATUSES } from '@tether/protocol';
import { QueueError } from '../errors.js';
import type { RunService } from './run-service.js';

/** What a batch id looks like (`newId('bat')`): anything else is no batch. */
const BATCH_ID = /^bat_[0-9a-z]{26}$/;

/**
 * The tenant's batch: its runs counted by status and the page of them after `cursor` (an offset
 * in the order they were given). `ERR_BATCH_NOT_FOUND` for a batch of another tenant, or none.
 */
export async function readBatch(
  service: RunService,
  tenant: string,
  batchId: string,
  page: { cursor?: string | undefined; limit?: number | undefined } = {},
): Promise<Batch> {
  const { record, ids, statuses } = await batchRuns(service, tenant, batchId);
  const counts: Partial<Record<RunStatus, number>> = {};
  for (const status of statuses) if (status) counts[status] = (counts[status] ?? 0) + 1;
  // The route lets only digits through.
  const offset = page.cursor === undefined ? 0 : Number.parseInt(page.cursor, 10) || 0;
  const limit = page.limit ?? BATCH_LIMITS.pageDefault;
  const runs: Batch['runs'] = [];
  for (let i = offset; i < Math.min(ids.length, offset + limit); i++) {
    const status = statuses[i];
    // A run deleted on its own (DELETE /v1/runs/:id) is no longer listed.
    if (status) runs.push({ id: ids[i] as string, status });
  }
  const total = Number(record.total);
  const completedAt = record.completedAt === undefined ? undefined : Number(record.completedAt);
  return {
    id: batchId,
    status: completedAt === undefined ? 'running' : 'completed',
    total,
    counts,
    createdAt: new Date(Number(record.createdAt)).toISOString(),
    ...(completedAt === undefined ? {} : { completedAt: new Date(completedAt).toISOString() }),
    ...(record.metadata ? { metadata: JSON.parse(record.metadata) as Record<string, unknown> } : {}),
    runs,
    nextCursor: offset + limit < ids.length ? String(offset + limit) : null,
  };
}

/**
 * Cancels every live run of the tenant's batch, as `POST /v1/runs/:id/cancel` would each (a
 * running one at its next step): how many were live. Runs that ended meanwhile are skipped.
 */
export async function cancelBatch(service: RunService, tenant: string, batchId: string): Promise<number> {
  const { ids, statuses } = await batchRuns(service, tenant, batchId);
  const live = ids.filter((_, i) => {
    const status = statuses[i];
    return status !== undefined && !TERMINAL_STATUSES.includes(status);
  });
  const cancelled = await Promise.all(
    live.map((runId) =>
      service.cancel(tenant, runId).then(
        () => true,
        (error: unknown) => {
          // Ended (or gone) between the read and the cancel: nothing to do.
          if (error instanceof QueueError && ['ERR_RUN_FINISHED', 'ERR_RUN_NOT_FOUND'].includes(error.code)) {
            return false;
          }
          throw error;
        },
      ),
    ),
  );
  return cancelled.filter(Boolean).length;
}

/** The batch's record, its run ids in order and each one's status (undefined: the run is gone). */
async function batchRuns(service: RunService, tenant: string, batchId: string) {
  const notFound = () => new QueueError('ERR_BATCH_NOT_FOUND', `No batch ${batchId}.`);
  if (!BATCH_ID.test(batchId)) throw notFound();
  const { redis, keys } = service.store;
  const batch = keys.batch(batchId);
  const [record, ids] = await Promise.all([redis.hgetall(batch.record), redis.lrange(batch.runs, 0, -1)]);
  if (record.tenant !== tenant) throw notFound();
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hget(keys.run(id).record, 'status');
  const replies = ids.length === 0 ? [] : ((await pipeline.exec()) ?? []);
  const statuses = replies.map(([error, status]) => {
    if (error) throw error;
    return (status ?? undefined) as RunStatus | undefined;
  });
  return { record, ids, statuses };
}
