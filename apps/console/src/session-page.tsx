import type { Session, TetherClient } from '@tether/client';
import { useState } from 'preact/hooks';
import { ConfirmDelete } from './confirm-delete.js';
import { useFollowTail } from './follow-tail.js';
import { prettyArgs } from './format.js';
import { QuestionCard } from './question.js';
import { hrefOf, navigate, onLinkClick } from './router.js';
import { HeldCall } from './session-approval.js';
import { type Chat, type ChatBlock, type ChatRun, chatBlocks, returnedQuestion } from './session-chat.js';
import { useDrafts, useSessionFeed } from './session-feed.js';
import { SessionBadge } from './sessions-page.js';
import { deliveryText } from './steer.js';

/** A question the last run returned with (the API's REST fallback): the next message answers it. */
type Returned = { question: string; choices: string[] };

/**
 * A session as a chat: each run's user message, its assistant text (streamed
 * live from the session's one event stream), its tool calls collapsed with a
 * link to the run's page, and its questions as cards; a "Message" field that
 * sends the next message, or answers the question that waits.
 */
export function SessionPage({ client, id }: { client: TetherClient; id: string }) {
  const { session, chat, inputs, error, refresh } = useSessionFeed(client, id);
  const [drafts, setDrafts] = useDrafts(client, chat, inputs);
  useFollowTail();

  if (session === undefined) return <p>Loading…</p>;
  if (session === null) return <SessionNotFound id={id} />;

  const inputOf = (runId: string) => inputs.get(runId) ?? drafts.get(runId);
  const lastRun = chat.runs[chat.runs.length - 1];
  // The API's REST fallback: the last run ended with its question, so the next message answers it.
  const returned =
    lastRun && session.status === 'idle' && session.lastRunId === lastRun.runId
      ? returnedQuestion(lastRun)
      : undefined;
  const suspended = session.pendingClarify;

  const sendMessage = async (text: string, steer = false) => {
    const run = await client.sessions.send(id, { input: text, ...(steer ? { multitask: 'steer' } : {}) });
    // Sent into the live run, the message is its event's (message.received), not a new run's input.
    if (run.messageId === undefined) setDrafts((current) => new Map(current).set(run.id, text));
    await refresh();
  };
  const answerSuspended = async (text: string) => {
    if (!suspended) return;
    await client.answer(suspended.runId, suspended.requestId, text);
    await refresh();
  };

  return (
    <>
      <SessionHead session={session} />
      {error ? <p role="alert">{error}</p> : null}
      <Conversation
        client={client}
        chat={chat}
        inputOf={inputOf}
        suspended={suspended}
        answerSuspended={answerSuspended}
        returned={returned}
        sendMessage={sendMessage}
      />
      <Composer
        mode={suspended ? 'answer' : returned ? 'reply' : 'message'}
        live={session.status !== 'idle'}
        onSend={suspended ? answerSuspended : sendMessage}
      />
      <SessionActions client={client} session={session} onChanged={refresh} />
    </>
  );
}

function SessionNotFound({ id }: { id: string }) {
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

/** The way back to the sessions, the session's id, its status and how many messages it has. */
function SessionHead({ session }: { session: Session }) {
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
        <dd>
          <SessionBadge status={session.status} testId="session-status" />
        </dd>
        <dt>Messages</dt>
        <dd>{session.runs}</dd>
      </dl>
    </>
  );
}

/** The chat's turns, one per run, oldest first; `returned` is the last run's. */
function Conversation({
  client,
  chat,
  inputOf,
  suspended,
  answerSuspended,
  returned,
  sendMessage,
}: {
  client: TetherClient;
  chat: Chat;
  inputOf: (runId: string) => string | undefined;
  suspended: Session['pendingClarify'];
  answerSuspended: (text: string) => Promise<void>;
  returned: Returned | undefined;
  sendMessage: (text: string) => Promise<void>;
}) {
  return (
    <section aria-labelledby="chat-heading">
      <h2 id="chat-heading" class="visually-hidden">
        Conversation
      </h2>
      {chat.runs.length === 0 ? <p>No messages yet: write the first below.</p> : null}
      <ol class="chat">
        {chat.runs.map((run, index) => (
          <Turn
            key={run.runId}
            client={client}
            run={run}
            input={inputOf(run.runId)}
            suspended={suspended?.runId === run.runId ? suspended : undefined}
            answerSuspended={answerSuspended}
            returned={index === chat.runs.length - 1 ? returned : undefined}
            sendMessage={sendMessage}
            answeredBy={returnedQuestion(run) ? nextInput(chat.runs, index, inputOf) : undefined}
          />
        ))}
      </ol>
    </section>
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
        <ConfirmDelete
          question={`Delete this session? Its messages, runs and files are removed${live ? ', and the running message is stopped' : ''}; this cannot be undone.`}
          confirmLabel="Yes, delete the session"
          busy={busy}
          onConfirm={() =>
            act('delete the session', async () => {
              await client.sessions.delete(session.id, { cancel: true });
              navigate(hrefOf({ page: 'sessions' }));
            })
          }
          onKeep={() => setConfirming(false)}
        />
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
  client,
  run,
  input,
  suspended,
  answerSuspended,
  returned,
  sendMessage,
  answeredBy,
}: {
  client: TetherClient;
  run: ChatRun;
  input: string | undefined;
  suspended: Session['pendingClarify'];
  answerSuspended: (text: string) => Promise<void>;
  returned: Returned | undefined;
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
          client={client}
          runId={run.runId}
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
  client,
  runId,
  block,
  ended,
  suspended,
  answerSuspended,
}: {
  client: TetherClient;
  runId: string;
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
  if (block.kind === 'approval') {
    return <HeldCall client={client} runId={runId} item={block.item} ended={ended} />;
  }
  if (block.kind === 'user') {
    // A message sent into the live run (steered): taken at its next turn boundary, or never.
    const { item } = block;
    return (
      <div class="bubble bubble-user">
        <span class="who">You, to the running message</span>
        <p class="said">{item.content}</p>
        <p class="hint">{deliveryText(item.delivery)}</p>
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
  steer:
    'Sent into the running message, without stopping it: taken at its next turn (a run waiting on a decision takes it when it wakes). Enter sends.',
} as const;

/**
 * The message field. While a message runs (`live`), a new one waits its turn, unless "Send into
 * the running message" is ticked: then it is steered into the live run, taken at its next turn
 * boundary without stopping it (`multitask: "steer"`).
 */
function Composer({
  mode,
  live,
  onSend,
}: {
  mode: keyof typeof HINTS;
  live: boolean;
  onSend: (text: string, steer?: boolean) => Promise<void>;
}) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [steer, setSteer] = useState(false);
  const steering = live && mode === 'message' && steer;
  const submit = async () => {
    const message = text.trim();
    if (message === '' || busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await onSend(message, steering);
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
        {steering ? HINTS.steer : HINTS[mode]}
      </p>
      {live && mode === 'message' ? (
        <label>
          <input
            type="checkbox"
            checked={steer}
            onChange={(event) => setSteer(event.currentTarget.checked)}
          />{' '}
          Send into the running message
        </label>
      ) : null}
      <button type="submit" disabled={busy || text.trim() === ''}>
        Send
      </button>
      {error ? <p role="alert">{error}</p> : null}
    </form>
  );
}
