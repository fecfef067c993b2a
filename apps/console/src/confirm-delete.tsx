import type { ComponentChildren } from 'preact';

/** "Delete this …?" asked in place: the question, a danger button that deletes, and "Keep it". */
export function ConfirmDelete({
  question,
  confirmLabel,
  busy,
  onConfirm,
  onKeep,
}: {
  question: ComponentChildren;
  confirmLabel: string;
  busy: boolean;
  onConfirm: () => void;
  onKeep: () => void;
}) {
  return (
    <fieldset class="card confirm">
      <legend>{question}</legend>
      <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
        {confirmLabel}
      </button>
      <button type="button" onClick={onKeep}>
        Keep it
      </button>
    </fieldset>
  );
}
