import type { Run, TetherClient } from '@tether/client';
import { useEffect, useState } from 'preact/hooks';
import { countdown } from './format.js';

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
  const [answer, setAnswer] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, []);
  const send = async (text: string) => {
    setBusy(true);
    setError(undefined);
    try {
      await client.answer(run.id, pending.requestId, text);
      onAnswered(await client.get(run.id));
    } catch (failure) {
      setError(`The answer was not taken: ${String(failure)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card question" aria-labelledby="question-heading">
      <h2 id="question-heading">The run asks</h2>
      <p class="question-text">{pending.question}</p>
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
      <p>
        Time left: <span data-testid="countdown">{countdown(pending.expiresAt, now)}</span>
      </p>
      {error ? <p role="alert">{error}</p> : null}
    </section>
  );
}
