/**
 * A session's chat from its event stream and its transcript: a pure fold, so
 * that the page only draws it and the unit tests check it without a browser.
 *
 * Invariants: a session event's id is `<runId>:<eventId>`; each run keeps its
 * own timeline (`foldEvents`), so an event seen again (a reload, a stream
 * that reconnects) is folded at most once. Runs are kept in the order their
 * first event arrived, which is the session's order (its stream is run after
 * run). A run's user message is the transcript's once the run has ended (the
 * API writes a turn in the step that ends its run), else what this page sent,
 * else the run's title.
 */

import type { RunEvent, TranscriptEntryView } from '@tether/protocol';
import { EMPTY_TIMELINE, foldEvents, type Timeline, type TimelineItem } from './timeline.js';

export type ChatRunStatus = 'live' | 'completed' | 'failed' | 'cancelled';

export interface ChatRun {
  runId: string;
  status: ChatRunStatus;
  timeline: Timeline;
}

export interface Chat {
  runs: ChatRun[];
}

export const EMPTY_CHAT: Chat = { runs: [] };

const ENDED: Partial<Record<RunEvent['type'], ChatRunStatus>> = {
  'run.completed': 'completed',
  'run.failed': 'failed',
  'run.cancelled': 'cancelled',
};

/** The run event id of session event id `id` (`<runId>:<eventId>`). */
export function runEventId(id: string): string {
  const colon = id.lastIndexOf(':');
  return colon < 0 ? id : id.slice(colon + 1);
}

/** The chat with the session's `events` folded in (a new object; `chat` is not changed). */
export function foldSessionEvents(chat: Chat, events: readonly RunEvent[]): Chat {
  const runs = [...chat.runs];
  const at = new Map(runs.map((run, index) => [run.runId, index]));
  for (const event of events) {
    let index = at.get(event.runId);
    if (index === undefined) {
      index = runs.length;
      at.set(event.runId, index);
      runs.push({ runId: event.runId, status: 'live', timeline: EMPTY_TIMELINE });
    }
    const run = runs[index] as ChatRun;
    const timeline = foldEvents(run.timeline, [{ ...event, id: runEventId(event.id) }]);
    // Folded before (a replay): nothing changes.
    if (timeline.lastEventId === run.timeline.lastEventId) continue;
    runs[index] = { ...run, timeline, status: ENDED[event.type] ?? run.status };
  }
  return { runs };
}

/** Each run's user message in the transcript, by run id. */
export function userMessages(transcript: readonly TranscriptEntryView[]): Map<string, string> {
  const inputs = new Map<string, string>();
  for (const entry of transcript) {
    if (entry.role === 'user' && !inputs.has(entry.runId)) inputs.set(entry.runId, entry.content);
  }
  return inputs;
}

/**
 * The question a run asked in `return` mode (the API's REST fallback): it
 * ended `completed` with a `clarify` call as its last step, so the session's
 * next message is the answer. Undefined for any other run.
 */
export function returnedQuestion(run: ChatRun): { question: string; choices: string[] } | undefined {
  if (run.status !== 'completed') return undefined;
  const last = [...run.timeline.items]
    .reverse()
    .find((item) => item.kind === 'tool' || item.kind === 'text' || item.kind === 'question');
  if (last?.kind !== 'tool' || last.name !== 'clarify' || last.result === undefined) return undefined;
  try {
    const args = JSON.parse(last.args) as { question?: unknown; choices?: unknown };
    if (typeof args.question !== 'string') return undefined;
    const choices = Array.isArray(args.choices)
      ? args.choices.filter((choice): choice is string => typeof choice === 'string')
      : [];
    return { question: args.question, choices };
  } catch {
    return undefined;
  }
}

type Item<K extends TimelineItem['kind']> = Extract<TimelineItem, { kind: K }>;

/** One block of a run's turn in the chat. */
export type ChatBlock =
  | { kind: 'text'; key: string; item: Item<'text'> }
  | { kind: 'tools'; key: string; items: Item<'tool'>[] }
  | { kind: 'question'; key: string; item: Item<'question'> }
  | { kind: 'approval'; key: string; item: Item<'approval'> }
  | { kind: 'user'; key: string; item: Item<'user'> };

/**
 * A run's turn as the chat draws it, in order: assistant text, questions,
 * calls held for approval (a crew child's too), messages sent into the live
 * run, and each stretch of tool calls between them as one (collapsed) block
 * (`clarify` calls left out: their questions are cards). Status, todo and
 * usage rows are left to the run's page.
 */
export function chatBlocks(run: ChatRun): ChatBlock[] {
  const blocks: ChatBlock[] = [];
  for (const item of run.timeline.items) {
    const last = blocks[blocks.length - 1];
    if (item.kind === 'text') blocks.push({ kind: 'text', key: item.key, item });
    else if (item.kind === 'question') blocks.push({ kind: 'question', key: item.key, item });
    else if (item.kind === 'approval') blocks.push({ kind: 'approval', key: item.key, item });
    else if (item.kind === 'user') blocks.push({ kind: 'user', key: item.key, item });
    // A clarify call is drawn as its question's card, not as a tool call.
    else if (item.kind === 'tool' && item.name !== 'clarify') {
      if (last?.kind === 'tools') last.items.push(item);
      else blocks.push({ kind: 'tools', key: item.key, items: [item] });
    }
  }
  return blocks;
}
