import { type RunEvent, TERMINAL_EVENT_TYPES, TERMINAL_STATUSES } from '@tether/protocol';
import type { EventHub } from '../runs/event-hub.js';
import type { RunStore } from '../runs/run-store.js';

/**
 * One reader following every run of a session, in order: each run's events
 * (its log after the cursor, then live, without gaps or duplicates, as the
 * run's own stream), then the next run's, and so on, waiting for the next run
 * once the last has ended. A session's runs execute one at a time, so this is
 * the order things happened in, but for `run.queued` of a run sent while
 * another was live, which comes right before its run's other events.
 *
 * An event's place in the session is its run and its id in that run's log:
 * a session cursor is `<runId>:<eventId>` (see {@link sessionCursor}).
 */

/** Events read from a run's log per request while replaying. */
const PAGE = 500;
/** Live events held while a run's backlog is read; past this the reader is too slow and is stopped. */
const MAX_BUFFERED = 10_000;
/** How often a follower waiting for the next run checks the session (should a notification be missed). */
const RECHECK_MS = 5_000;

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/** A session event: a run event whose id is its session cursor (`<runId>:<eventId>`). */
export type SessionEvent = RunEvent;

/**
 * Session events by the run event they wrap: the hub hands every listener of
 * a run the same event object, so every follower of a session gets the same
 * session event object too (and a transport can encode it once, not once per
 * client).
 */
const sessionEvents = new WeakMap<RunEvent, SessionEvent>();

/** A run's event as a session event: the same, with its session cursor as its id. */
export function asSessionEvent(runId: string, event: RunEvent): SessionEvent {
  let wrapped = sessionEvents.get(event);
  if (wrapped === undefined) {
    wrapped = { ...event, id: sessionCursor(runId, event.id) } as SessionEvent;
    sessionEvents.set(event, wrapped);
  }
  return wrapped;
}

/** The session cursor of a run's event. */
export function sessionCursor(runId: string, eventId: string): string {
  return `${runId}:${eventId}`;
}

/** A session cursor's run and event id, or undefined when it is not one. */
export function parseSessionCursor(cursor: string): { runId: string; eventId: string } | undefined {
  const colon = cursor.indexOf(':');
  if (colon < 0) return undefined;
  const runId = cursor.slice(0, colon);
  const eventId = cursor.slice(colon + 1);
  if (!/^run_[0-9a-z_]{26,60}$/.test(runId) || !/^[0-9]{1,20}-[0-9]{1,20}$/.test(eventId)) return undefined;
  return { runId, eventId };
}

/**
 * A page of a session's events after a cursor (undefined: from the start), at
 * most `limit`, in the follower's order, and the cursor to read on from: the
 * last event's, or `after` again when nothing follows yet ('0' from the start).
 * A page never reads past a run that is still live.
 */
export async function readSessionEvents(
  store: RunStore,
  sessionId: string,
  after: { runId: string; eventId: string } | undefined,
  limit: number,
): Promise<{ events: SessionEvent[]; next: string }> {
  const runs = await store.redis.lrange(store.keys.session(sessionId).runs, 0, -1);
  let index = 0;
  let eventId = '0';
  if (after) {
    const at = runs.indexOf(after.runId);
    index = at >= 0 ? at : runs.filter((id) => id < after.runId).length;
    if (at >= 0) eventId = after.eventId;
  }
  const events: SessionEvent[] = [];
  const read = async (runId: string) => {
    const page = await store.readEvents(runId, eventId, limit - events.length);
    for (const event of page) events.push({ ...event, id: sessionCursor(runId, event.id) } as SessionEvent);
    if (page.length > 0) eventId = (page.at(-1) as RunEvent).id;
    return page.length;
  };
  for (; index < runs.length && events.length < limit; index++, eventId = '0') {
    const runId = runs[index] as string;
    await read(runId);
    if (events.length >= limit) break;
    const run = await store.get(runId);
    // Still live: what it appends next comes before any later run's events.
    if (run && !TERMINAL_STATUSES.includes(run.status)) break;
    // Ended while its log was read: the rest of its log first.
    await read(runId);
  }
  const last = events.at(-1);
  return { events, next: last ? last.id : after ? sessionCursor(after.runId, after.eventId) : '0' };
}

export interface SessionFollowerOptions {
  store: RunStore;
  hub: EventHub;
  sessionId: string;
  /** Follow from after this cursor; undefined: from the session's first event (or `fromRun`'s). */
  after?: { runId: string; eventId: string } | undefined;
  /**
   * Without `after`: follow from this run's first event on (the runs before it
   * are skipped), as a client that just sent the message of this run wants.
   */
  fromRun?: string | undefined;
  /** Each event, in order, its id a session cursor. Return false to stop following. */
  onEvent: (event: SessionEvent) => boolean;
  /** The follower stopped on its own: the session is gone, or the reader is too slow, or Redis failed. */
  onStop?: (why: 'gone' | 'slow' | 'error', error?: unknown) => void;
}

export class SessionFollower {
  readonly #options: SessionFollowerOptions;
  #stopped = false;
  /** Resolves when the follower stops. */
  readonly #stoppedSignal: Promise<void>;
  #resolveStopped: () => void = () => {};
  #wake: (() => void) | undefined;
  #unsubscribeRuns: (() => Promise<void>) | undefined;
  #unsubscribeRun: (() => Promise<void>) | undefined;

  constructor(options: SessionFollowerOptions) {
    this.#options = options;
    this.#stoppedSignal = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
  }

  /** Starts following; resolves once subscribed (the backlog then flows in the background). */
  async start(): Promise<void> {
    const { hub, sessionId } = this.#options;
    this.#unsubscribeRuns = await hub.subscribeSessionRuns(sessionId, () => this.#wake?.());
    if (this.#stopped) {
      await this.#unsubscribeRuns();
      return;
    }
    void this.#follow().catch((error: unknown) => this.#end('error', error));
  }

  /** Stops following (idempotent). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#resolveStopped();
    this.#wake?.();
    const unsubscribes = [this.#unsubscribeRuns, this.#unsubscribeRun];
    this.#unsubscribeRuns = undefined;
    this.#unsubscribeRun = undefined;
    for (const unsubscribe of unsubscribes) unsubscribe?.().catch(() => {});
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  #end(why: 'gone' | 'slow' | 'error', error?: unknown): void {
    if (this.#stopped) return;
    this.stop();
    this.#options.onStop?.(why, error);
  }

  async #follow(): Promise<void> {
    const { store, sessionId } = this.#options;
    const runsKey = store.keys.session(sessionId).runs;
    const recordKey = store.keys.session(sessionId).record;
    let runId = this.#options.after?.runId ?? this.#options.fromRun;
    let after = this.#options.after?.eventId ?? '0';
    let index = 0;
    for (;;) {
      if (this.#stopped) return;
      const runs = await store.redis.lrange(runsKey, 0, -1);
      if (runId !== undefined) {
        const at = runs.indexOf(runId);
        // The cursor's run is gone (deleted or expired): go on from the runs after it by id.
        index = at >= 0 ? at : runs.filter((id) => id < (runId as string)).length;
        if (at < 0) after = '0';
        runId = undefined;
      }
      if (index < runs.length) {
        const current = runs[index] as string;
        if (!(await this.#followRun(current, after))) return;
        index++;
        after = '0';
        continue;
      }
      if ((await store.redis.exists(recordKey)) === 0) {
        this.#end('gone');
        return;
      }
      // Wait for the next run (or a periodic look, should a notification be missed).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RECHECK_MS);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /** Follows one run to its terminal event (or its end, if its log is gone). False once stopped. */
  async #followRun(runId: string, after: string): Promise<boolean> {
    const { store, hub } = this.#options;
    let lastId = after;
    let replaying = true;
    let buffer: RunEvent[] = [];
    let ended = false;
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const deliver = (event: RunEvent): boolean => {
      if (this.#stopped || ended) return false;
      if (compareIds(event.id, lastId) <= 0) return true;
      lastId = event.id;
      const keep = this.#options.onEvent(asSessionEvent(runId, event));
      if (!keep) {
        this.stop();
        return false;
      }
      if (TERMINAL.has(event.type)) {
        ended = true;
        done();
        return false;
      }
      return true;
    };
    this.#unsubscribeRun = await hub.subscribe(runId, (event) => {
      if (!replaying) {
        deliver(event);
        return;
      }
      buffer.push(event);
      if (buffer.length > MAX_BUFFERED) this.#end('slow');
    });
    const unsubscribe = this.#unsubscribeRun;
    try {
      if (this.#stopped) return false;
      const replay = async (): Promise<boolean> => {
        for (;;) {
          const page = await store.readEvents(runId, lastId, PAGE);
          for (const event of page) if (!deliver(event)) return !this.#stopped;
          if (page.length < PAGE) return true;
        }
      };
      if (!(await replay()) || ended) return !this.#stopped;
      replaying = false;
      const buffered = buffer;
      buffer = [];
      for (const event of buffered) if (!deliver(event)) return !this.#stopped;
      // Ended before we subscribed (its log holds the rest), or gone: nothing more will come live.
      const run = await store.get(runId);
      if (!run || TERMINAL_STATUSES.includes(run.status)) {
        await replay();
        return !this.#stopped;
      }
      await Promise.race([finished, this.#stoppedSignal]);
      return !this.#stopped;
    } finally {
      if (this.#unsubscribeRun === unsubscribe) this.#unsubscribeRun = undefined;
      await unsubscribe().catch(() => {});
    }
  }
}

/** Orders stream ids (`ms-seq`); '0' is before every id. */
export function compareIds(a: string, b: string): number {
  if (a === b) return 0;
  // Without allocating (it runs for every follower on every event): of two decimal parts, the one
  // with more significant digits is the greater, and parts of one length compare by text.
  const aDash = a.indexOf('-');
  const bDash = b.indexOf('-');
  const aEnd = aDash < 0 ? a.length : aDash;
  const bEnd = bDash < 0 ? b.length : bDash;
  return (
    compareDigits(a, 0, aEnd, b, 0, bEnd) ||
    compareDigits(
      a,
      aDash < 0 ? a.length : aDash + 1,
      a.length,
      b,
      bDash < 0 ? b.length : bDash + 1,
      b.length,
    )
  );
}

/** Compares the decimal numbers `a[aFrom, aTo)` and `b[bFrom, bTo)`; an empty one is 0. */
function compareDigits(a: string, aFrom: number, aTo: number, b: string, bFrom: number, bTo: number): number {
  // Leading zeros skipped, "0" and a missing part are both empty: only significant digits count.
  while (aFrom < aTo && a.charCodeAt(aFrom) === 48) aFrom++;
  while (bFrom < bTo && b.charCodeAt(bFrom) === 48) bFrom++;
  if (aTo - aFrom !== bTo - bFrom) return aTo - aFrom < bTo - bFrom ? -1 : 1;
  for (let i = 0; i < aTo - aFrom; i++) {
    const d = a.charCodeAt(aFrom + i) - b.charCodeAt(bFrom + i);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}
