import type { RunEvent, Session, TetherClient } from '@tether/client';
import { type Dispatch, type StateUpdater, useEffect, useRef, useState } from 'preact/hooks';
import { coalesce, perFrame } from './reading.js';
import { type Chat, EMPTY_CHAT, foldSessionEvents, userMessages } from './session-chat.js';

/** Events that change what `GET /v1/sessions/:id` says (status, question): the session is read again after each. */
const SESSION_CHANGING: ReadonlySet<RunEvent['type']> = new Set([
  'run.queued',
  'run.started',
  'clarify.requested',
  'clarify.answered',
  'clarify.timed_out',
  'run.completed',
  'run.failed',
  'run.cancelled',
]);
/** Events after which the run's turn is in the transcript. */
const RUN_ENDED: ReadonlySet<RunEvent['type']> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

const READ_FAILED = 'Could not read the session:';

/** What {@link useSessionFeed} keeps of a session, live. */
export interface SessionFeed {
  /** Undefined while the first read is on its way; null once the API says there is no such session. */
  session: Session | null | undefined;
  chat: Chat;
  /** Each run's user message: the transcript's once its run has ended. */
  inputs: ReadonlyMap<string, string>;
  error: string | undefined;
  /** Reads the session again (one read at a time). */
  refresh: () => Promise<void>;
}

/**
 * A session followed live: the session read again after each event that
 * changes it, the chat folded from its one event stream, and the user
 * messages read from the transcript after each run ends.
 */
export function useSessionFeed(client: TetherClient, id: string): SessionFeed {
  const [session, setSession] = useState<Session | null>();
  const [chat, setChat] = useState<Chat>(EMPTY_CHAT);
  const [inputs, setInputs] = useState<ReadonlyMap<string, string>>(new Map());
  const [error, setError] = useState<string>();
  const refreshRef = useRef<() => Promise<void>>(async () => {});

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    const refresh = coalesce(() =>
      client.sessions.get(id, { signal }).then(
        (next) => {
          setSession(next);
          setError((current) => (current?.startsWith(READ_FAILED) ? undefined : current));
        },
        (failure: unknown) => {
          if (signal.aborted) return;
          if (failure instanceof Error && failure.name === 'TetherNotFoundError') setSession(null);
          else setError(`${READ_FAILED} ${String(failure)}`);
        },
      ),
    );
    refreshRef.current = refresh;
    const readTranscript = coalesce(async () => {
      try {
        const entries = [];
        for await (const entry of client.sessions.allMessages(id, { limit: 1_000, signal }))
          entries.push(entry);
        setInputs(userMessages(entries));
      } catch (failure) {
        if (signal.aborted) return;
        if (failure instanceof Error && failure.name === 'TetherNotFoundError') return;
        setError(`Could not read the messages: ${String(failure)}`);
      }
    });
    const follow = async () => {
      void refresh();
      void readTranscript();
      // Events arrive in bursts: they are folded in per animation frame, not one render each.
      const fold = perFrame<RunEvent>((events) => setChat((current) => foldSessionEvents(current, events)));
      try {
        // From the start: the stream replays every run's events, then follows; the SDK resumes
        // after a dropped connection with Last-Event-ID, and each run's fold skips what it has seen.
        for await (const event of client.sessions.events(id, { signal })) {
          fold(event);
          if (SESSION_CHANGING.has(event.type)) void refresh();
          if (RUN_ENDED.has(event.type)) void readTranscript();
        }
        // The stream ends when the session is deleted.
        if (!signal.aborted) void refresh();
      } catch (failure) {
        if (signal.aborted) return;
        if (failure instanceof Error && failure.name === 'TetherNotFoundError') {
          setSession(null);
          return;
        }
        setError(`The event stream stopped: ${String(failure)}`);
      }
    };
    void follow();
    return () => controller.abort();
  }, [client, id]);

  return { session, chat, inputs, error, refresh: () => refreshRef.current() };
}

/**
 * Each run's user message until the transcript has it: what this page sent
 * (the caller sets it), or, for a run this page did not send, its title.
 */
export function useDrafts(
  client: TetherClient,
  chat: Chat,
  inputs: ReadonlyMap<string, string>,
): [ReadonlyMap<string, string>, Dispatch<StateUpdater<ReadonlyMap<string, string>>>] {
  const [drafts, setDrafts] = useState<ReadonlyMap<string, string>>(new Map());
  const asked = useRef(new Set<string>());

  // A run this page did not send, still without its turn in the transcript: its title stands in.
  useEffect(() => {
    for (const run of chat.runs) {
      if (inputs.has(run.runId) || drafts.has(run.runId) || asked.current.has(run.runId)) continue;
      asked.current.add(run.runId);
      client.get(run.runId).then(
        (found) => setDrafts((current) => new Map(current).set(run.runId, found.title ?? '')),
        () => {},
      );
    }
  }, [client, chat, inputs, drafts]);

  return [drafts, setDrafts];
}
