import type { Run, RunEvent, TetherClient } from '@tether/client';
import { type Dispatch, type StateUpdater, useEffect, useState } from 'preact/hooks';
import { coalesce, perFrame } from './reading.js';
import { EMPTY_TIMELINE, foldEvents, type Timeline } from './timeline.js';
import { EMPTY_TRACE, foldTrace, type Trace } from './trace.js';

/** Events that change what `GET /v1/runs/:id` says (status, question, held calls, usage): the run is read again after each. */
const RUN_CHANGING: ReadonlySet<RunEvent['type']> = new Set([
  'run.started',
  'attempt.started',
  'clarify.requested',
  'clarify.answered',
  'clarify.timed_out',
  'approval.requested',
  'approval.resolved',
  'todo.updated',
  'usage',
  'run.retrying',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'child.started',
  'child.finished',
]);

/** Tools whose results mean the workspace may have changed: the Files tab reads it again after each. */
const FILE_CHANGING_TOOLS: ReadonlySet<string> = new Set(['write_file', 'patch', 'bash']);
/** Events after which the workspace may have changed (a child writes in its tree's workspace). */
const FILE_CHANGING_EVENTS: ReadonlySet<RunEvent['type']> = new Set([
  'child.finished',
  'run.completed',
  'run.failed',
  'run.cancelled',
]);
/** Whether `event` says the workspace may have changed. */
const changesFiles = (event: RunEvent): boolean =>
  FILE_CHANGING_EVENTS.has(event.type) ||
  (event.type === 'tool.result' && FILE_CHANGING_TOOLS.has(event.data.name));

const READ_FAILED = 'Could not read the run:';
/** Events per page of the history read before the stream (the API's most). */
const HISTORY_PAGE = 1_000;

/** What {@link useRunFeed} keeps of a run, live. */
export interface RunFeed {
  /** Undefined while the first read is on its way; null once the API says there is no such run. */
  run: Run | null | undefined;
  /** For what the page learns of the run by acting on it (an answer, a cancel). */
  setRun: Dispatch<StateUpdater<Run | null | undefined>>;
  timeline: Timeline;
  /** The same events as spans on a time axis. */
  trace: Trace;
  error: string | undefined;
  /** Bumped by the stream's events: the Files tab reads the workspace again. */
  filesVersion: number;
  /** Bumped by the stream's events: the crew tree reads its runs again. */
  crewVersion: number;
}

/**
 * A run followed live: read again after each event that changes it, its
 * timeline folded from its history and then its stream, and versions bumped
 * for the views that read the workspace and the crew.
 */
export function useRunFeed(client: TetherClient, id: string): RunFeed {
  const [run, setRun] = useState<Run | null>();
  const [timeline, setTimeline] = useState<Timeline>(EMPTY_TIMELINE);
  const [trace, setTrace] = useState<Trace>(EMPTY_TRACE);
  const [error, setError] = useState<string>();
  const [filesVersion, setFilesVersion] = useState(0);
  const [crewVersion, setCrewVersion] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    const read = () =>
      client.get(id, { signal }).then(
        (next) => {
          setRun(next);
          // A read that failed while the API was away is forgotten once one succeeds.
          setError((current) => (current?.startsWith(READ_FAILED) ? undefined : current));
        },
        (failure: unknown) => {
          if (signal.aborted) return;
          if (failure instanceof Error && failure.name === 'TetherNotFoundError') setRun(null);
          else setError(`${READ_FAILED} ${String(failure)}`);
        },
      );
    // One read at a time: events that change the run while one is on its way ask for one more
    // after it, not one each (a long run's replay has hundreds of them).
    const refresh = coalesce(read);
    const follow = async () => {
      // The run and its history are read side by side: the timeline does not wait for the run.
      void refresh();
      // Events arrive in bursts: they are folded in per animation frame, not one render each.
      const foldAll = (events: RunEvent[]) => {
        setTimeline((current) => foldEvents(current, events));
        setTrace((current) => foldTrace(current, events));
      };
      const fold = perFrame<RunEvent>(foldAll);
      try {
        // The history first, then the stream from the last event of the history.
        const lastEventId = await readHistory(client, id, signal, (events) => {
          foldAll(events);
          // The first reads of the run and of the Files tab may have come before these events (a run
          // that ended while the page opened has its last events here, and none on the stream): one
          // more read per page that changes them.
          if (events.some((event) => RUN_CHANGING.has(event.type))) void refresh();
          if (events.some(changesFiles)) setFilesVersion((version) => version + 1);
        });
        for await (const event of client.stream(id, { signal, lastEventId })) {
          fold(event);
          if (RUN_CHANGING.has(event.type)) void refresh();
          if (changesFiles(event)) setFilesVersion((version) => version + 1);
          if (event.type === 'child.started' || event.type === 'child.finished') {
            setCrewVersion((version) => version + 1);
          }
        }
      } catch (failure) {
        if (signal.aborted) return;
        if (failure instanceof Error && failure.name === 'TetherNotFoundError') return;
        setError(`The event stream stopped: ${String(failure)}`);
      }
    };
    void follow();
    return () => controller.abort();
  }, [client, id]);

  return { run, setRun, timeline, trace, error, filesVersion, crewVersion };
}

/**
 * The run's history, by pages of JSON (a page of 1,000 events is one answer,
 * cheaper to send and to read than 1,000 SSE frames), each page that has
 * events given to `onPage`. Returns the id of the history's last event, for
 * the stream to follow from.
 */
async function readHistory(
  client: TetherClient,
  id: string,
  signal: AbortSignal,
  onPage: (events: RunEvent[]) => void,
): Promise<string | undefined> {
  let lastEventId: string | undefined;
  for (;;) {
    const page = await client.events(id, { after: lastEventId, limit: HISTORY_PAGE, signal });
    const last = page.data.at(-1);
    if (last) {
      lastEventId = last.id;
      onPage(page.data);
    }
    if (page.data.length < HISTORY_PAGE || page.nextCursor === null) break;
  }
  return lastEventId;
}
