import type { Run, TetherClient } from '@tether/client';
import { useState } from 'preact/hooks';
import { type SentMessage, sendRunMessage, steerRefusalText, untakenMessages } from './steer.js';
import type { Timeline } from './timeline.js';

/**
 * "Message the run": a message for a live run, which it takes at its next
 * turn boundary without stopping. Sending clears the field; the messages the
 * run has not taken yet are listed under it (this page's at once, anyone's
 * once their event arrives) until the run takes them, when the timeline says
 * at which turn. A refusal (the run ended, holds too many, is gone) is said in
 * words and the text is kept. Ctrl+Enter (⌘+Enter) sends too.
 */
export function SteerForm({ client, run, timeline }: { client: TetherClient; run: Run; timeline: Timeline }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [sent, setSent] = useState<SentMessage[]>([]);
  const untaken = untakenMessages(timeline.items, sent);

  const send = async () => {
    const content = text.trim();
    if (content === '' || busy) return;
    setBusy(true);
    setError(undefined);
    try {
      const messageId = await sendRunMessage(client, run.id, content);
      setSent((current) => [...current, { messageId, content }]);
      setText('');
    } catch (failure) {
      setError(steerRefusalText(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="card composer steer"
      aria-labelledby="steer-heading"
      onSubmit={(event) => {
        event.preventDefault();
        void send();
      }}
    >
      <h2 id="steer-heading">Message the run</h2>
      <label for="steer-message">Message for the run</label>
      <textarea
        id="steer-message"
        rows={3}
        value={text}
        aria-describedby="steer-hint"
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && !event.isComposing) {
            event.preventDefault();
            void send();
          }
        }}
      />
      <p id="steer-hint" class="hint">
        The run takes it at its next turn boundary, without stopping: after the model turn under way and the
        results of its tool calls. A run waiting for an answer or a decision takes it when it wakes (a message
        does not wake it). Ctrl+Enter sends.
      </p>
      <button type="submit" disabled={busy || text.trim() === ''}>
        Send message
      </button>
      {error ? (
        <p role="alert" class="error-text">
          {error}
        </p>
      ) : null}
      <UntakenMessages messages={untaken} />
    </form>
  );
}

/** The messages the run has not taken yet, each as its text: a polite live region, so a screen reader hears one added. */
function UntakenMessages({ messages }: { messages: readonly SentMessage[] }) {
  return (
    <section aria-live="polite" aria-labelledby={messages.length > 0 ? 'untaken-heading' : undefined}>
      {messages.length > 0 ? (
        <>
          <h3 id="untaken-heading" class="hint">
            Pending: not taken by the run yet
          </h3>
          <ul class="untaken">
            {messages.map((message) => (
              <li key={message.messageId} class="pre-line">
                {message.content}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
