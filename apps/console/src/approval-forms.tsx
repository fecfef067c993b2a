import { APPROVAL_LIMITS, type ApprovalDecisionBody } from '@tether/protocol';
import { useEffect, useRef, useState } from 'preact/hooks';
import { editorText, parseEditedArguments } from './approval.js';

/**
 * An edit of a held call: its arguments as JSON in "Arguments (JSON)", checked
 * as they are typed (not JSON, or not an object, is said under the field and
 * marked invalid), then "Send edit". What is wrong is never sent: Send edit
 * says so (an alert, until the text is mended) and puts the focus back in
 * the field. The API checks
 * the rest against the tool's parameters; its refusal is the card's to show,
 * and the editor stays open with what was typed.
 */
export function EditArguments({
  id,
  initial,
  busy,
  onSend,
}: {
  id: string;
  initial: unknown;
  busy: boolean;
  onSend: (body: ApprovalDecisionBody) => Promise<void>;
}) {
  const [text, setText] = useState(() => editorText(initial));
  const [refused, setRefused] = useState(false);
  const field = useRef<HTMLTextAreaElement>(null);
  useEffect(() => field.current?.focus(), []);
  const parsed = parseEditedArguments(text);
  const problem = parsed.ok ? undefined : parsed.problem;
  return (
    <form
      id={id}
      class="approval-form"
      onSubmit={(event) => {
        event.preventDefault();
        if (parsed.ok) {
          void onSend({ decision: 'edit', arguments: parsed.arguments });
          return;
        }
        setRefused(true);
        field.current?.focus();
      }}
    >
      <label for={`${id}-json`}>Arguments (JSON)</label>
      <textarea
        id={`${id}-json`}
        class="json"
        ref={field}
        rows={Math.min(16, Math.max(4, text.split('\n').length + 1))}
        spellcheck={false}
        aria-describedby={`${id}-hint`}
        aria-invalid={problem ? true : undefined}
        value={text}
        onInput={(event) => setText(event.currentTarget.value)}
      />
      <p class={problem ? 'hint error-text' : 'hint'} id={`${id}-hint`}>
        {problem ??
          "The call runs with these arguments instead, once the API has checked them against the tool's parameters."}
      </p>
      {refused && problem ? (
        <p role="alert" class="error-text">
          Not sent: {problem}
        </p>
      ) : null}
      <button type="submit" disabled={busy}>
        Send edit
      </button>
    </form>
  );
}

/** A rejection: an optional "Message for the model" (told with the refusal), then "Send rejection". */
export function RejectMessage({
  id,
  busy,
  onSend,
}: {
  id: string;
  busy: boolean;
  onSend: (body: ApprovalDecisionBody) => Promise<void>;
}) {
  const [message, setMessage] = useState('');
  const field = useRef<HTMLTextAreaElement>(null);
  useEffect(() => field.current?.focus(), []);
  return (
    <form
      id={id}
      class="approval-form"
      onSubmit={(event) => {
        event.preventDefault();
        const said = message.trim();
        void onSend(said === '' ? { decision: 'reject' } : { decision: 'reject', message: said });
      }}
    >
      <label for={`${id}-message`}>Message for the model</label>
      <textarea
        id={`${id}-message`}
        ref={field}
        rows={3}
        maxLength={APPROVAL_LIMITS.messageMaxLength}
        aria-describedby={`${id}-hint`}
        value={message}
        onInput={(event) => setMessage(event.currentTarget.value)}
      />
      <p class="hint" id={`${id}-hint`}>
        Optional. The call does not run; the model is told a reviewer refused it, with this message.
      </p>
      <button type="submit" disabled={busy}>
        Send rejection
      </button>
    </form>
  );
}
