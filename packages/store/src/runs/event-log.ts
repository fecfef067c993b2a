import type { RunEvent, RunEventInput } from '@tether/protocol';
import type { RunKeys } from '../redis/keys.js';
import { SlotPipelines } from '../redis/slot-pipelines.js';
import type { StoreContext } from '../redis/store-context.js';
import * as scripts from './commands/scripts.js';
import { requestRefs, toEvent } from './replies.js';

/** The last id a stream can hold: both parts 2^64 - 1. */
const LAST_STREAM_ID = '18446744073709551615-18446744073709551615';

/** Appends events in order, in one step, unless the run has ended (or, with `token`, another worker owns it). */
export async function appendEvents(
  ctx: StoreContext,
  runId: string,
  events: readonly RunEventInput[],
  token = '',
): Promise<boolean> {
  if (events.length === 0) return true;
  const keys = ctx.keys.run(runId);
  const appended = await scripts.appendEvents.run(ctx.redis, {
    keys,
    args: {
      ...eventArgs(ctx, keys, runId),
      token,
      events: eventPairs(events),
    },
  });
  return typeof appended === 'number';
}

/** Events after `afterId` (exclusive; '0' for all), oldest first. */
export async function readEvents(
  ctx: StoreContext,
  runId: string,
  afterId = '0',
  count = 1_000,
): Promise<RunEvent[]> {
  // Nothing can follow the last id a stream can hold, and XRANGE refuses to start after it.
  if (afterId === LAST_STREAM_ID) return [];
  const start = afterId === '0' || afterId === '' ? '-' : `(${afterId}`;
  const entries = await ctx.redis.xrange(ctx.keys.run(runId).events, start, '+', 'COUNT', count);
  return entries.map(([id, fields]) => toEvent(runId, id, fields));
}

/** Events as the scripts take them: type, data (JSON), type, data, … */
export function eventPairs(events: readonly RunEventInput[]): string[] {
  const pairs: string[] = [];
  for (const event of events) pairs.push(event.type, JSON.stringify(event.data));
  return pairs;
}

/**
 * The arguments every script that appends a run's events takes, beside its
 * own: the channel it publishes them on, how many the log keeps
 * (`XADD MAXLEN ~`), and the run's id.
 */
export function eventArgs(
  ctx: Pick<StoreContext, 'eventMaxLength'>,
  keys: Pick<RunKeys, 'eventsChannel'>,
  runId: string,
): { channel: string; maxlen: number; runId: string } {
  return { channel: keys.eventsChannel, maxlen: ctx.eventMaxLength, runId };
}

/**
 * The data of events found by their ids, of many runs (one round trip, one pipeline per hash slot
 * on a cluster): by run id, then by the caller's name for each (a waitpoint's request id). An event
 * the log no longer has is left out.
 */
export async function readEventData(
  ctx: StoreContext,
  wanted: readonly { runId: string; name: string; eventId: string }[],
): Promise<Map<string, Map<string, string>>> {
  const found = new Map<string, Map<string, string>>();
  if (wanted.length === 0) return found;
  const pipelines = new SlotPipelines(ctx.redis);
  for (const { runId, eventId } of wanted) {
    const events = ctx.keys.run(runId).events;
    pipelines.add(events, (pipeline) => pipeline.xrange(events, eventId, eventId));
  }
  const replies = await pipelines.exec();
  wanted.forEach(({ runId, name }, i) => {
    const [error, entries] = replies[i] ?? [null, []];
    if (error) throw error;
    const fields = (entries as [string, string[]][])[0]?.[1] ?? [];
    const data = fields[fields.indexOf('d') + 1];
    if (fields.includes('d') && data !== undefined) {
      const ofRun = found.get(runId) ?? new Map<string, string>();
      ofRun.set(name, data);
      found.set(runId, ofRun);
    }
  });
  return found;
}

/** What `readEventData` needs to find the requests of waitpoints: each request named by its event. */
export function requestEvents(
  runId: string,
  hash: Record<string, string>,
): { runId: string; name: string; eventId: string }[] {
  return requestRefs(hash).flatMap((ref) =>
    ref.eventId ? [{ runId, name: ref.id, eventId: ref.eventId }] : [],
  );
}
