import type { RunEvent, Session, TetherClient } from '@tether/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { prettyArgs } from './format.js';
import { QuestionCard } from './question.js';
import { coalesce, perFrame } from './reading.js';
import { hrefOf, navigate, onLinkClick } from './router.js';
import {
  type Chat,
  type ChatBlock,
  type ChatRun,
  chatBlocks,
  EMPTY_CHAT,
  foldSessionEvents,
  returnedQuestion,
  userMessages,
} from './session-chat.js';
import { SESSION_STATUS_TEXT } from './sessions-page.js';

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
/** How near the end of the page counts as at its end, for following the chat. */
const FOLLOW_SLACK_PX = 80;

/**
 * A session as a chat: each run's user message, its assistant text (streamed
 * live from the session's one event stream), its tool calls collapsed with a
 * link to the run's page, and its questions as cards; a "Message" field that
 * sends the next message, or answers the question that waits.
 */
export function SessionPage({ client, id }: { client: TetherClient; id: string }) {
  const [session, setSession] = useState<Session | null>();
  const [chat, setChat] = useState<Chat>(EMPTY_CHAT);
  // Each run's user message: the transcript's once its run has ended.
  const [inputs, setInputs] = useState<ReadonlyMap<string, string>>(new Map());
  // Until then: what this page sent, or the run's title.
  const [drafts, setDrafts] = useState<ReadonlyMap<string, string>>(new Map());
  const [error, setError] = useState<string>();
  const refreshRef = useRef<() => Promise<void>>(async () => {});
  const asked = useRef(new Set<string>());

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

  // The chat follows what arrives while the page is scrolled to its end (the Message field there);
  // scrolled up to read, it stays put. Only a scroll up stops following: a scroll event that
  // lands after the page grew again (its own scroll to the end, or the browser's) is not the
  // reader leaving the end. Any growth, whatever render or element made it, scrolls to the end.
  const following = useRef(true);
  useEffect(() => {
    const root = document.documentElement;
    const atEnd = () => window.innerHeight + window.scrollY >= root.scrollHeight - FOLLOW_SLACK_PX;
    let lastY = window.scrollY;
    const scrolled = () => {
      const y = window.scrollY;
      if (y < lastY) following.current = atEnd();
      else if (atEnd()) following.current = true;
      lastY = y;
    };
    const grown = new ResizeObserver(() => {
      if (following.current && root.scrollHeight - window.innerHeight - window.scrollY > 1) {
        window.scrollTo(0, root.scrollHeight);
      }
    });
    grown.observe(document.body);
    window.addEventListener('scroll', scrolled, { passive: true });
    return () => {
      grown.disconnect();
      window.removeEventListener('scroll', scrolled);
    };
  }, []);

  if (session === undefined) return <p>Loading…</p>;
  if (session === null) {
    return (
      <>
        <h1>Session not found</h1>
        <p>
          No session {id} for this key.{' '}
          <a href={hrefOf({ page: 'sessions' })} onClick={onLinkClick}>
            See the sessions
          </a>
          .
        </p>
      </>
    );
  }

  const inputOf = (runId: string) => inputs.get(runId) ?? drafts.get(runId);
  const lastRun = chat.runs[chat.runs.length - 1];
  // The API's REST fallback: the last run ended with its question, so the next message answers it.
  const returned =
    lastRun && session.status === 'idle' && session.lastRunId === lastRun.runId
      ? returnedQuestion(lastRun)
      : undefined;
  const suspended = session.pendingClarify;

  const sendMessage = async (text: string) => {
    const run = await client.sessions.send(id, { input: text });
    setDrafts((current) => new Map(current).set(run.id, text));
    await refreshRef.current();
  };
  const answerSuspended = async (text: string) => {
    if (!suspended) return;
    await client.answer(suspended.runId, suspended.requestId, text);
    await refreshRef.current();
  };

  return (
    <>
      <p>
        <a href={hrefOf({ page: 'sessions' })} onClick={onLinkClick}>
          ← Sessions
        </a>
      </p>
      <h1 class="run-id">Session {session.id}</h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd class={`status status-${session.status}`} data-testid="session-status">
          {SESSION_STATUS_TEXT[session.status]}
        </dd>
        <dt>Messages</dt>
        <dd>{session.runs}</dd>
      </dl>
      {error ? <p role="alert">{error}</p> : null}
      <section aria-labelledby="chat-heading">
        <h2 id="chat-heading" class="visually-hidden">
          Conversation
        </h2>
        {chat.runs.length === 0 ? <p>No messages yet: write the first below.</p> : null}
        <ol class="chat">
          {chat.runs.map((run, index) => (
            <Turn
              key={run.runId}
              run={run}
              input={inputOf(run.runId)}
              suspended={suspended?.runId === run.runId ? suspended : undefined}
              answerSuspended={answerSuspended}
              returned={run === lastRun ? returned : undefined}
              sendMessage={sendMessage}
              answeredBy={returnedQuestion(run) ? nextInput(chat.runs, index, inputOf) : undefined}
            />
          ))}
        </ol>
      </section>
      <Composer
        mode={suspended ? 'answer' : returned ? 'reply' : 'message'}
        onSend={suspended ? answerSuspended : sendMessage}
      />
      <SessionActions client={client} session={session} onChanged={() => refreshRef.current()} />
    </>
  );
}

/**
 * "Stop" for the message that runs (its run cancelled at once, as a chat's stop button does), and
 * "Delete session" after confirming (its transcript, runs and workspace; a live run is cancelled
 * first), which goes back to the sessions.
 */
function SessionActions({
  client,
  session,
  onChanged,
}: {
  client: TetherClient;
  session: Session;
  onChanged: () => Promise<void>;
}) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const live = session.status !== 'idle' ? session.lastRunId : undefined;
  const act = async (what: string, action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(`Could not ${what}: ${String(failure)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="session-actions">
      {live ? (
        <button
          type="button"
          class="danger"
          disabled={busy}
          onClick={() =>
            act('stop', async () => {
              await client.cancel(live);
              await onChanged();
            })
          }
        >
          Stop
        </button>
      ) : null}
      {confirming ? (
        <fieldset class="card confirm">
          <legend>
            Delete this session? Its messages, runs and files are removed
            {live ? ', and the running message is stopped' : ''}; this cannot be undone.
          </legend>
          <button
            type="button"
            class="danger"
            disabled={busy}
            onClick={() =>
              act('delete the session', async () => {
                await client.sessions.delete(session.id, { cancel: true });
                navigate(hrefOf({ page: 'sessions' }));
              })
            }
          >
            Yes, delete the session
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep it
          </button>
        </fieldset>
      ) : (
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete session
        </button>
      )}
      {error ? <p role="alert">{error}</p> : null}
    </div>
  );
}

/** The message of the run after `index`, when there is one: what answered a returned question. */
function nextInput(
  runs: readonly ChatRun[],
  index: number,
  inputOf: (runId: string) => string | undefined,
): string | undefined {
  const next = runs[index + 1];
  return next ? (inputOf(next.runId) ?? '…') : undefined;
}

function Turn({
  run,
  input,
  suspended,
  answerSuspended,
  returned,
  sendMessage,
  answeredBy,
}: {
  run: ChatRun;
  input: string | undefined;
  suspended: Session['pendingClarify'];
  answerSuspended: (text: string) => Promise<void>;
  returned: { question: string; choices: string[] } | undefined;
  sendMessage: (text: string) => Promise<void>;
  answeredBy: string | undefined;
}) {
  const blocks = chatBlocks(run);
  const asked = returnedQuestion(run);
  return (
    <li class="turn" data-run-id={run.runId}>
      <div class="bubble bubble-user">
        <span class="who">You</span>
        <p class="said">{input ?? '…'}</p>
      </div>
      {blocks.map((block) => (
        <Block
          key={block.key}
          block={block}
          ended={run.status !== 'live'}
          suspended={suspended}
          answerSuspended={answerSuspended}
        />
      ))}
      {asked && returned ? (
        <QuestionCard
          pending={returned}
          onSend={sendMessage}
          heading="The assistant asks"
          note="Choose, type an answer, or write your next message below: the next message is the answer."
        />
      ) : asked ? (
        <Decided
          question={asked.question}
          outcome={answeredBy === undefined ? undefined : { answer: answeredBy }}
        />
      ) : null}
      {run.status === 'failed' || run.status === 'cancelled' ? (
        <p class="error-text">{run.status === 'failed' ? 'This run failed.' : 'This run was cancelled.'}</p>
      ) : null}
      <p class="turn-link">
        <a href={hrefOf({ page: 'run', id: run.runId })} onClick={onLinkClick}>
          Run {run.runId}
        </a>
      </p>
    </li>
  );
}

function Block({
  block,
  ended,
  suspended,
  answerSuspended,
}: {
  block: ChatBlock;
  /** Whether the block's run has ended: a question it left without an outcome will have none. */
  ended: boolean;
  suspended: Session['pendingClarify'];
  answerSuspended: (text: string) => Promise<void>;
}) {
  if (block.kind === 'text') {
    const { item } = block;
    return (
      <div class="bubble bubble-assistant" aria-busy={item.streaming}>
        <span class="who">Assistant</span>
        <p class="said">{item.text}</p>
      </div>
    );
  }
  if (block.kind === 'tools') {
    const names = block.items.map((item) => item.name).join(', ');
    return (
      <details class="tool-calls">
        <summary>
          {block.items.length === 1 ? '1 tool call' : `${block.items.length} tool calls`}: {names}
        </summary>
        <ul>
          {block.items.map((item) => (
            <li key={item.key}>
              <strong>{item.name}</strong>
              {item.result ? (item.result.ok ? ' (done)' : ' (failed)') : ' (running)'}
              <pre class="output">{prettyArgs(item.args)}</pre>
              {item.result ? <pre class="output">{item.result.content}</pre> : null}
            </li>
          ))}
        </ul>
      </details>
    );
  }
  const { item } = block;
  if (item.outcome === undefined && suspended?.requestId === item.requestId) {
    return <QuestionCard pending={suspended} onSend={answerSuspended} />;
  }
  return <Decided question={item.question} outcome={item.outcome ?? (ended ? { ended: true } : undefined)} />;
}

/** A question once decided (or still on its way to the card): the question and what became of it. */
function Decided({
  question,
  outcome,
}: {
  question: string;
  outcome: { answer: string } | { timedOut: true } | { ended: true } | undefined;
}) {
  return (
    <div class="card decided">
      <p>
        <span class="who">Asked:</span> {question}
      </p>
      <p data-testid="decided">
        {outcome === undefined
          ? 'Waiting for an answer…'
          : 'answer' in outcome
            ? `Answered: ${outcome.answer}`
            : 'timedOut' in outcome
              ? 'No answer came in time.'
              : 'Not answered: the run ended first.'}
      </p>
    </div>
  );
}

const HINTS = {
  message: 'Enter sends, Shift+Enter starts a new line.',
  answer:
    'A question is waiting: your message is sent as its answer. Enter sends, Shift+Enter starts a new line.',
  reply:
    'A question is waiting: your next message is its answer. Enter sends, Shift+Enter starts a new line.',
} as const;

function Composer({ mode, onSend }: { mode: keyof typeof HINTS; onSend: (text: string) => Promise<void> }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const submit = async () => {
    const message = text.trim();
    if (message === '' || busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await onSend(message);
      setText('');
    } catch (failure) {
      setError(`The message was not sent: ${String(failure)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="card composer"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <label for="message">Message</label>
      <textarea
        id="message"
        rows={3}
        value={text}
        placeholder={mode === 'message' ? 'Write a message' : 'Write your answer'}
        aria-describedby="message-hint"
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            void submit();
          }
        }}
      />
      <p id="message-hint" class="hint">
        {HINTS[mode]}
      </p>
      <button type="submit" disabled={busy || text.trim() === ''}>
        Send
      </button>
      {error ? <p role="alert">{error}</p> : null}
    </form>
  );
}
