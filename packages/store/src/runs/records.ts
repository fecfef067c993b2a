import type { RunEventInput, RunStatus } from '@tether/protocol';
import { idTime, runTitle } from '@tether/protocol';
import { type CallOf, isNoScript } from '../redis/lua-script.js';
import { SlotPipelines } from '../redis/slot-pipelines.js';
import type { StoreContext } from '../redis/store-context.js';
import * as scripts from './commands/scripts.js';
import { readEventData, requestEvents } from './event-log.js';
import { parseRecord, parseWaitpoint, type RunRecord, type StoredBody } from './replies.js';

/**
 * What a crew child's spec carries beyond a submitted body: its goal and
 * context (for its system prompt), where it sits in its tree, and whose
 * workspace it works in (its tree's root's).
 */
export interface CrewSpec {
  goal: string;
  context?: string | undefined;
  parentRunId: string;
  rootRunId: string;
  depth: number;
  /** The run (and session) whose workspace the child works in. */
  workspace: { id: string; sessionId?: string | undefined };
}

/** A run's stored spec: the submitted body, or a crew child's (with `crew`). */
export type RunSpec = StoredBody & { crew?: CrewSpec | undefined };

/** A run to create: its id, tenant, the submitted body, when, and the body's hash (idempotent requests). */
export interface NewRun {
  id: string;
  tenant: string;
  spec: RunSpec;
  /** When it was submitted (epoch ms). */
  createdAtMs: number;
  /** The BullMQ prefix of the queue its job goes to: its shard's (see `TetherKeys.shardOf`). */
  queue: string;
  bodyHash?: string | undefined;
  /** A session's run: its session, its input as a transcript entry (JSON), and what to do when the session is busy. */
  session?: { id: string; input: string; multitask: 'enqueue' | 'reject' | 'interrupt' } | undefined;
  /** A crew child: its parent, its tree's root, its depth, and its place in the delegation that starts it. */
  crew?: ChildLink | undefined;
  /** A retry: the failed or cancelled run it starts again. */
  retryOf?: string | undefined;
  /** A delayed run: when it starts (epoch ms, later than `createdAtMs`); it is `scheduled` until then. */
  runAtMs?: number | undefined;
  /** A run of a batch: the batch's id (the run's id carries its tag, see `newBatchRunId`). */
  batch?: string | undefined;
  /**
   * A deadline to start by (epoch ms): not started by then, the run ends `expired` (its claim checks
   * it, and the expiry sweep ends one nobody takes up).
   */
  expiresAtMs?: number | undefined;
  /** A schedule's run: the schedule's id (`sch_<name>`). */
  scheduleId?: string | undefined;
  /** An event appended right after `run.queued`, in the step that creates the run (`schedule.fired`). */
  next?: RunEventInput | undefined;
}

/** Where a crew child sits: its parent, root and depth, the delegation's call and its task index, and its deadline. */
export interface ChildLink {
  parentRunId: string;
  rootRunId: string;
  depth: number;
  call: string;
  index: number;
  /** When it times out (epoch ms). */
  deadlineMs: number;
}

export type { RunRecord, StoredBody } from './replies.js';

type CreateCall = CallOf<typeof scripts.createRun>;

/**
 * The metadata a run is listed by (`GET /v1/runs?metadata.<key>=<value>`): its string values of
 * at most this many characters (a longer value, or one that is no string, is kept but not indexed).
 */
export const METADATA_INDEX_VALUE_MAX = 256;

/** The (key, value) pairs of a run's metadata that are indexed for filters. */
export function indexedMetadata(metadata: Record<string, unknown> | undefined): [string, string][] {
  if (!metadata) return [];
  return Object.entries(metadata).filter(
    (pair): pair is [string, string] =>
      typeof pair[1] === 'string' && pair[1].length <= METADATA_INDEX_VALUE_MAX,
  );
}

/** The tenant's index keys a run is in: its list, and one per indexed metadata pair (one hash slot). */
export function indexKeys(ctx: StoreContext, tenant: string, metadata: Record<string, unknown> | undefined) {
  return [
    ctx.keys.tenantRuns(tenant),
    ...indexedMetadata(metadata).map(([key, value]) => ctx.keys.tenantRunsByMetadata(tenant, key, value)),
  ];
}

/**
 * Creates several runs in one round trip (one per hash slot on a cluster):
 * each record (with `run.queued`) and its entries in the tenant's indexes (its
 * list, and one per indexed metadata pair). The indexes are in another hash
 * slot, so not in the script; listing skips ids whose record is not the tenant's. Returns, per run and in order, true, false (the
 * id exists), 'no_session' or 'busy' (a session's run refused, see the
 * `createRun` script), or the error Redis answered.
 */
export async function createRuns(
  ctx: StoreContext,
  runs: readonly NewRun[],
): Promise<(boolean | 'no_session' | 'busy' | Error)[]> {
  if (runs.length === 0) return [];
  const calls = runs.map((run) => createCall(ctx, run));
  const pipelines = new SlotPipelines(ctx.redis);
  const indexes = runs.map((run) => indexKeys(ctx, run.tenant, run.spec.metadata));
  // Where each run's replies start: its script's, then one per index key.
  const starts: number[] = [];
  let position = 0;
  for (const [index, run] of runs.entries()) {
    const call = calls[index] as CreateCall;
    const keys = indexes[index] as string[];
    starts.push(position);
    position += 1 + keys.length;
    pipelines.add(call.keys.record, (pipeline) => scripts.createRun.queue(pipeline, call));
    pipelines.add(keys[0] as string, (pipeline) => {
      for (const key of keys) pipeline.zadd(key, 0, run.id);
    });
  }
  const replies = await pipelines.exec();
  const addToIndexes = async (run: NewRun, keys: string[]) => {
    const pipeline = ctx.redis.pipeline();
    for (const key of keys) pipeline.zadd(key, 0, run.id);
    await pipeline.exec();
  };
  return Promise.all(
    runs.map(async (run, index) => {
      const call = calls[index] as CreateCall;
      const keys = indexes[index] as string[];
      const start = starts[index] as number;
      const created = replies[start];
      const indexed = replies.slice(start + 1, start + 1 + keys.length).find(([error]) => error);
      let [error, id] = created ?? [new Error('Redis sent no reply for the run')];
      if (error && isNoScript(error)) {
        // Redis forgot the script (a restart or failover): run it by its source.
        try {
          [error, id] = [null, await scripts.createRun.run(ctx.redis, call)];
          // A listing in between could have dropped the entries as a run that is gone: add them again.
          if (id) await addToIndexes(run, keys);
        } catch (retryError) {
          error = retryError as Error;
        }
      }
      if (error) return error;
      if (indexed?.[0]) return indexed[0];
      if (id === 'no_session' || id === 'busy') {
        // Refused: the index entries written beside it name no run.
        const pipeline = ctx.redis.pipeline();
        for (const key of keys) pipeline.zrem(key, run.id);
        await pipeline.exec();
        return id;
      }
      return Boolean(id);
    }),
  );
}

function createCall(ctx: StoreContext, run: NewRun): CreateCall {
  const keys = ctx.keys.run(run.id);
  const fields: string[] = [
    'id',
    run.id,
    'tenant',
    run.tenant,
    'status',
    run.runAtMs === undefined ? 'queued' : 'scheduled',
    'createdAt',
    String(run.createdAtMs),
    'attempts',
    '0',
    'todos',
    '[]',
    'queue',
    run.queue,
  ];
  if (run.bodyHash) fields.push('bodyHash', run.bodyHash);
  if (run.retryOf) fields.push('retryOf', run.retryOf);
  if (run.batch) fields.push('batch', run.batch);
  if (run.runAtMs !== undefined) fields.push('runAt', String(run.runAtMs));
  if (run.expiresAtMs !== undefined) fields.push('expiresAt', String(run.expiresAtMs));
  if (run.scheduleId) fields.push('schedule', run.scheduleId);
  // Kept for the run's life (its spec goes when it ends): lists show it.
  fields.push('title', runTitle(run.spec.input));
  if (run.crew) {
    const { parentRunId, rootRunId, depth, call, index, deadlineMs } = run.crew;
    fields.push('parent', parentRunId, 'root', rootRunId, 'depth', String(depth));
    fields.push('call', call, 'index', String(index), 'deadline', String(deadlineMs));
  }
  return {
    keys: {
      ...keys,
      sessionRecord: keys.session.record,
      sessionRuns: keys.session.runs,
      sessionQueue: keys.session.queue,
      parentChildren: run.crew ? ctx.keys.run(run.crew.parentRunId).children : keys.unused,
    },
    args: {
      channel: keys.eventsChannel,
      maxlen: ctx.eventMaxLength,
      runId: run.id,
      spec: JSON.stringify(run.spec),
      metadata: run.spec.metadata ? JSON.stringify(run.spec.metadata) : '',
      session: run.session?.id ?? '',
      multitask: run.session?.multitask ?? '',
      input: run.session?.input ?? '',
      runsChannel: keys.session.runsChannel,
      sessionTtl: ctx.sessionTtlSeconds,
      parent: run.crew?.parentRunId ?? '',
      scheduled:
        run.runAtMs === undefined ? '' : JSON.stringify({ runAt: new Date(run.runAtMs).toISOString() }),
      nextType: run.next?.type ?? '',
      nextData: run.next ? JSON.stringify(run.next.data) : '',
      fields,
    },
  };
}

/**
 * Records in order (undefined where a run is gone), with their specs if
 * `withSpec`: one round trip (one per hash slot on a cluster), and a second
 * for the pending requests of runs waiting for input, unless `withRequests`
 * is false.
 */
export async function readRecords(
  ctx: StoreContext,
  runIds: readonly string[],
  withSpec: boolean,
  withRequests = true,
): Promise<(RunRecord | undefined)[]> {
  if (runIds.length === 0) return [];
  const pipelines = new SlotPipelines(ctx.redis);
  for (const id of runIds) {
    const keys = ctx.keys.run(id);
    pipelines.add(keys.record, (pipeline) => {
      pipeline.hgetall(keys.record);
      pipeline.get(keys.metadata);
      pipeline.hgetall(keys.waitpoint);
      if (withSpec) pipeline.get(keys.spec);
    });
  }
  const replies = await pipelines.exec();
  for (const [error] of replies) if (error) throw error;
  const per = withSpec ? 4 : 3;
  const reply = (i: number, offset: number) => replies[i * per + offset]?.[1];
  // A run waiting for input shows its pending requests: their events' data, a second round trip.
  const waiting = runIds.flatMap((runId, i) => {
    const status = (reply(i, 0) as Record<string, string> | undefined)?.status;
    const waitpoint = reply(i, 2) as Record<string, string>;
    return withRequests && status === 'waiting_for_input' ? requestEvents(runId, waitpoint) : [];
  });
  const bodies = await readEventData(ctx, waiting);
  return runIds.map((runId, i) => {
    const hash = reply(i, 0) as Record<string, string>;
    if (!hash?.id) return undefined;
    return parseRecord(hash, {
      metadata: reply(i, 1) as string | null,
      waitpoint: parseWaitpoint(reply(i, 2) as Record<string, string>, bodies.get(runId)),
      spec: withSpec ? (reply(i, 3) as string | null) : null,
    });
  });
}

/**
 * Moves the submitted files out of the stored spec once the worker has written
 * them (a later attempt must not write them again over the run's work), into
 * the run's `files` key, where a retry finds them. One step (the run's slot).
 */
export async function dropFiles(ctx: StoreContext, runId: string, spec: StoredBody): Promise<void> {
  if (!spec.files) return;
  const { files, ...rest } = spec;
  const keys = ctx.keys.run(runId);
  const replies = await ctx.redis
    .multi()
    .set(keys.spec, JSON.stringify(rest), 'XX')
    .set(keys.files, JSON.stringify(files))
    .exec();
  for (const [error] of replies ?? []) if (error) throw error;
}

/** The submitted files a worker moved out of the run's spec (see {@link dropFiles}), if any are kept. */
export async function keptFiles(
  ctx: StoreContext,
  runId: string,
): Promise<Record<string, string> | undefined> {
  const json = await ctx.redis.get(ctx.keys.run(runId).files);
  return json ? (JSON.parse(json) as Record<string, string>) : undefined;
}

export async function loadCheckpoint(ctx: StoreContext, runId: string): Promise<string | undefined> {
  return (await ctx.redis.get(ctx.keys.run(runId).checkpoint)) ?? undefined;
}

/**
 * How old a run must be (by its id's time) before a listing that finds no
 * record for its index entry removes the entry. A run's index entries and its
 * record are written together but, on a cluster, in pipelines of their own
 * (other hash slots): for a moment the entries can name a run whose record
 * is not there yet, and a listing must not take that run for gone. Runs
 * expire after their retention (hours at least), and a deleted run's entries
 * go with it, so an entry younger than this is only skipped. Generous, for
 * hosts whose clocks disagree.
 */
export const INDEX_ENTRY_GRACE_MS = 5 * 60_000;

/** Whether a listing may remove the index entry of `runId`, whose record it did not find. */
function goneForGood(runId: string, now: number): boolean {
  const made = idTime(runId);
  return made === undefined || now - made > INDEX_ENTRY_GRACE_MS;
}

/** The most index entries one page of a filtered listing reads before it answers (with a cursor). */
export const LIST_SCAN_MAX = 1_000;

/** How a tenant's runs are listed: a page of `limit` after `cursor` (a run id), by status and metadata. */
export interface ListOptions {
  status?: RunStatus | undefined;
  limit: number;
  cursor?: string | undefined;
  /** Metadata equality, every pair (ANDed); each value a string of at most {@link METADATA_INDEX_VALUE_MAX}. */
  metadata?: Readonly<Record<string, string>> | undefined;
}

/**
 * A tenant's runs, newest first, `limit` at a time after `cursor` (a run id).
 * With `metadata`, the index of one of its pairs (the smallest) is read
 * instead of the tenant's whole list, and the other pairs and the status are
 * checked on the records; such a page reads at most {@link LIST_SCAN_MAX}
 * index entries, and may then hold fewer than `limit` runs with a cursor to go on.
 */
export async function listRuns(
  ctx: StoreContext,
  tenant: string,
  options: ListOptions,
): Promise<{ runs: RunRecord[]; nextCursor: string | null }> {
  const pairs = Object.entries(options.metadata ?? {});
  const key = pairs.length === 0 ? ctx.keys.tenantRuns(tenant) : await smallestIndex(ctx, tenant, pairs);
  const filtered = options.status !== undefined || pairs.length > 1;
  const matches = (record: RunRecord) =>
    (!options.status || record.status === options.status) &&
    pairs.every(([name, value]) => record.metadata?.[name] === value);
  const runs: RunRecord[] = [];
  let cursor = options.cursor;
  let scanned = 0;
  // Ids sort by creation time, so the index is read in reverse lexical order.
  for (;;) {
    const batch = filtered ? Math.max(options.limit * 4, 100) : options.limit + 1;
    const ids = await ctx.redis.zrevrangebylex(key, cursor ? `(${cursor}` : '+', '-', 'LIMIT', 0, batch);
    if (ids.length === 0) return { runs, nextCursor: null };
    const records = await readRecords(ctx, ids, false);
    const gone: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const record = records[i];
      const id = ids[i] as string;
      cursor = id;
      // Gone (expired, or deleted), or an id that was never this tenant's run; or a run just
      // submitted whose record is still on its way (another hash slot): skipped, and kept.
      if (!record || record.tenant !== tenant) {
        if (record || goneForGood(id, Date.now())) gone.push(id);
        continue;
      }
      if (!matches(record)) continue;
      if (runs.length === options.limit) {
        if (gone.length > 0) await ctx.redis.zrem(key, ...gone);
        return { runs, nextCursor: (runs.at(-1) as RunRecord).id };
      }
      runs.push(record);
    }
    // Runs whose keys expired leave the index as they are met.
    if (gone.length > 0) await ctx.redis.zrem(key, ...gone);
    if (ids.length < batch) return { runs, nextCursor: null };
    scanned += ids.length;
    // A filter that few entries match: answer what was found, and where to go on.
    if (pairs.length > 0 && scanned >= LIST_SCAN_MAX) return { runs, nextCursor: cursor ?? null };
  }
}

/** The index key of the pair with the fewest runs (one round trip in the tenant's slot). */
async function smallestIndex(ctx: StoreContext, tenant: string, pairs: [string, string][]): Promise<string> {
  const keys = pairs.map(([name, value]) => ctx.keys.tenantRunsByMetadata(tenant, name, value));
  if (keys.length === 1) return keys[0] as string;
  const pipeline = ctx.redis.pipeline();
  for (const key of keys) pipeline.zcard(key);
  const sizes = ((await pipeline.exec()) ?? []).map(([error, size]) => {
    if (error) throw error;
    return size as number;
  });
  return keys[sizes.indexOf(Math.min(...sizes))] as string;
}
