import type { Run, TetherClient } from '@tether/client';
import { useEffect, useState } from 'preact/hooks';
import { countdown } from './format.js';

/** What a question card shows: the question, its choices, and its deadline when it has one. */
export interface AskedQuestion {
  question: string;
  choices: readonly string[];
  /** The run's deadline for an answer (a suspended run's question); none for a question the next message answers. */
  expiresAt?: string;
}

/** A run's pending question: its text, one button per choice, "Your answer" with "Send", and the time left. */
export function Question({
  client,
  run,
  pending,
  onAnswered,
}: {
  client: TetherClient;
  run: Run;
  pending: NonNullable<Run['pendingClarify']>;
  onAnswered: (run: Run) => void;
}) {
  return (
    <QuestionCard
      pending={pending}
      onSend={async (text) => {
        await client.answer(run.id, pending.requestId, text);
        onAnswered(await client.get(run.id));
      }}
    />
  );
}

/**
 * A question waiting for its answer: its text, one button per choice (the
 * choice's text is its accessible name), a field labelled "Your answer" with
 * "Send", and the time left when it has a deadline. `onSend` delivers the
 * answer (the run page's and a session's suspended question: the clarify
 * route; a session's returned question: the next message).
 */
export function QuestionCard({
  pending,
  onSend,
  heading = 'The run asks',
  note,
}: {
  pending: AskedQuestion;
  onSend: (answer: string) => Promise<void>;
  heading?: string;
  /** A line under the question (how the answer is delivered). */
  note?: string;
}) {
  const [answer, setAnswer] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [now, setNow] = useState(Date.now());
  const { expiresAt } = pending;
  useEffect(() => {
    if (expiresAt === undefined) return;
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [expiresAt]);
  const send = async (text: string) => {
    setBusy(true);
    setError(undefined);
    try {
      await onSend(text);
    } catch (failure) {
      setError(`The answer was not taken: ${String(failure)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card question" aria-labelledby="question-heading">
      <h2 id="question-heading">{heading}</h2>
      <p class="question-text">{pending.question}</p>
      {note ? <p class="hint">{note}</p> : null}
      {pending.choices.length > 0 ? (
        <div class="choices">
          {pending.choices.map((choice) => (
            <button type="button" key={choice} disabled={busy} onClick={() => send(choice)}>
              {choice}
            </button>
          ))}
        </div>
      ) : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (answer.trim() !== '') void send(answer.trim());
        }}
      >
        <label for="answer">Your answer</label>
        <input id="answer" value={answer} onInput={(event) => setAnswer(event.currentTarget.value)} />
        <button type="submit" disabled={busy || answer.trim() === ''}>
          Send
        </button>
      </form>
      {expiresAt === undefined ? null : (
        <p>
          Time left: <span data-testid="countdown">{countdown(expiresAt, now)}</span>
        </p>
      )}
      {error ? <p role="alert">{error}</p> : null}
    </section>
  );
}
