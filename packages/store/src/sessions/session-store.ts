import type { PendingClarify, SessionDefaults, SessionStatus, TranscriptEntryView } from '@tether/protocol';
import type { StoreContext } from '../redis/store-context.js';
import { isoTime } from '../runs/replies.js';
import { unlinkRuns } from '../runs/run-removal.js';
import * as scripts from './commands/scripts.js';

/**
 * Sessions in Redis: a record (hash), its runs (list), the queue of its live
 * runs (list, the head may execute), its transcript (list of entries) and the
 * files for its first run, all under the session's hash tag, with its runs'
 * keys (see keys.ts). A session's keys expire `sessionTtlSeconds` after its
 * last activity (a run added or ended).
 */

/** A session as stored. */
export interface SessionRecord {
  id: string;
  tenant: string;
  createdAt: string;
  updatedAt: string;
  runs: number;
  lastRunId: string | null;
  defaults: SessionDefaults;
  metadata: Record<string, unknown>;
  /** The session's live runs in order: the head is the one that executes. */
  queue: string[];
}

export interface NewSession {
  id: string;
  tenant: string;
  createdAtMs: number;
  defaults?: SessionDefaults | undefined;
  metadata?: Record<string, unknown> | undefined;
  files?: Record<string, string> | undefined;
}

/** Creates a session: its record, its files for the first run, and its entry in the tenant's index. */
export async function createSession(ctx: StoreContext, session: NewSession): Promise<void> {
  const keys = ctx.keys.session(session.id);
  const at = String(session.createdAtMs);
  const transaction = ctx.redis
    .multi()
    .hset(keys.record, {
      id: session.id,
      tenant: session.tenant,
      createdAt: at,
      updatedAt: at,
      runCount: '0',
      defaults: JSON.stringify(session.defaults ?? {}),
      metadata: JSON.stringify(session.metadata ?? {}),
    })
    .expire(keys.record, ctx.sessionTtlSeconds);
  if (session.files && Object.keys(session.files).length > 0) {
    transaction.set(keys.files, JSON.stringify(session.files), 'EX', ctx.sessionTtlSeconds);
  }
  const replies = await transaction.exec();
  for (const [error] of replies ?? []) if (error) throw error;
  // Another hash slot: the index is written after, and listing skips ids that are gone.
  await ctx.redis.zadd(ctx.keys.tenantSessions(session.tenant), 0, session.id);
}

/** The session, or undefined when it is gone (or the id names another session with the same tag). */
export async function readSession(ctx: StoreContext, sessionId: string): Promise<SessionRecord | undefined> {
  const [record] = await readSessions(ctx, [sessionId]);
  return record;
}

/** Several sessions in order (undefined where one is gone): one round trip per hash slot. */
export async function readSessions(
  ctx: StoreContext,
  sessionIds: readonly string[],
): Promise<(SessionRecord | undefined)[]> {
  const replies = await Promise.all(
    sessionIds.map((id) => {
      const keys = ctx.keys.session(id);
      return ctx.redis.pipeline().hgetall(keys.record).lrange(keys.queue, 0, -1).exec();
    }),
  );
  return sessionIds.map((id, index) => {
    const [[hashError, hash], [queueError, queue]] = (replies[index] ?? []) as [
      [Error | null, Record<string, string>],
      [Error | null, string[]],
    ];
    if (hashError) throw hashError;
    if (queueError) throw queueError;
    if (hash?.id !== id) return undefined;
    return {
      id,
      tenant: hash.tenant as string,
      createdAt: isoTime(hash.createdAt as string),
      updatedAt: isoTime(hash.updatedAt as string),
      runs: Number(hash.runCount ?? 0),
      lastRunId: hash.lastRunId ?? null,
      defaults: JSON.parse(hash.defaults ?? '{}') as SessionDefaults,
      metadata: JSON.parse(hash.metadata ?? '{}') as Record<string, unknown>,
      queue,
    };
  });
}

/** A tenant's sessions, newest first, `limit` at a time after `cursor` (a session id). */
export async function listSessions(
  ctx: StoreContext,
  tenant: string,
  options: { limit: number; cursor?: string | undefined },
): Promise<{ sessions: SessionRecord[]; nextCursor: string | null }> {
  const key = ctx.keys.tenantSessions(tenant);
  const sessions: SessionRecord[] = [];
  let cursor = options.cursor;
  for (;;) {
    const batch = options.limit + 1;
    const ids = await ctx.redis.zrevrangebylex(key, cursor ? `(${cursor}` : '+', '-', 'LIMIT', 0, batch);
    if (ids.length === 0) return { sessions, nextCursor: null };
    const records = await readSessions(ctx, ids);
    const gone: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const record = records[i];
      const id = ids[i] as string;
      if (!record || record.tenant !== tenant) {
        gone.push(id);
        cursor = id;
        continue;
      }
      if (sessions.length === options.limit) {
        if (gone.length > 0) await ctx.redis.zrem(key, ...gone);
        return { sessions, nextCursor: (sessions.at(-1) as SessionRecord).id };
      }
      sessions.push(record);
      cursor = id;
    }
    // Sessions whose keys expired leave the index as they are met.
    if (gone.length > 0) await ctx.redis.zrem(key, ...gone);
    if (ids.length < batch) return { sessions, nextCursor: null };
  }
}

/** Transcript entries from `offset` (0 for the first), at most `limit`, and the offset of the next page. */
export async function readTranscript(
  ctx: StoreContext,
  sessionId: string,
  offset: number,
  limit: number,
): Promise<{ entries: TranscriptEntryView[]; next: number | null }> {
  const key = ctx.keys.session(sessionId).transcript;
  const raw = await ctx.redis.lrange(key, offset, offset + limit);
  const entries = raw.slice(0, limit).map((json) => {
    const { tokens: _tokens, ...entry } = JSON.parse(json) as TranscriptEntryView & { tokens?: number };
    return entry;
  });
  return { entries, next: raw.length > limit ? offset + limit : null };
}

/**
 * Deletes the session, unless it has a live run ('busy'), or a run was added
 * since `runIds` was read ('changed': read again and retry); then every key of
 * its runs and its entries in the tenant's indexes. The session goes first, in
 * one step, so no run can join it meanwhile; should the process die before
 * the runs' keys are gone, they are ended runs and expire after the runs'
 * retention.
 */
export async function deleteSession(
  ctx: StoreContext,
  sessionId: string,
  tenant: string,
  runIds: readonly string[],
): Promise<'ok' | 'busy' | 'changed' | 'missing'> {
  const keys = ctx.keys.session(sessionId);
  const result = await scripts.deleteSession.run(ctx.redis, {
    keys: { ...keys, sessionRecord: keys.record, sessionRuns: keys.runs, sessionQueue: keys.queue },
    args: { sessionId, runCount: runIds.length },
  });
  if (result !== 'ok') return result;
  // Followers of the session waiting for its next run learn now that there is none.
  await ctx.redis.publish(keys.runsChannel, '');
  await unlinkRuns(ctx, tenant, runIds);
  await ctx.redis.zrem(ctx.keys.tenantSessions(tenant), sessionId);
  return 'ok';
}

/** What a session is doing, from its queue's head run. */
export function sessionStatus(head: { status: string } | undefined): SessionStatus {
  if (!head) return 'idle';
  return head.status === 'waiting_for_input' ? 'waiting_for_input' : 'busy';
}

export type { PendingClarify };
