import type { ApprovalDecisionBody, ApprovalDecisionKind } from '@tether/protocol';
import { useEffect, useRef, useState } from 'preact/hooks';
import { argumentsText, decisionText } from './approval.js';
import { EditArguments, RejectMessage } from './approval-forms.js';
import { countdown } from './format.js';
import { onLinkClick, runHref } from './router.js';
import type { HeldCall } from './timeline.js';
import { ToolArguments } from './tool-call.js';

/** A decision as a card shows it: the event's (who, with what), or the one this page just sent. */
export interface CardDecision {
  decision: ApprovalDecisionKind;
  by?: string;
  timedOut?: boolean;
  arguments?: Record<string, unknown>;
}

/** Sends a decision: undefined once taken (or refused as a conflict, which the page says), else what the API said. */
export type Decide = (body: ApprovalDecisionBody) => Promise<string | undefined>;

type Mode = 'buttons' | 'edit' | 'reject';

/**
 * One held call: its tool, why it was held, the time left, and its arguments
 * in full, as what they are (a command, a file and its content, a diff);
 * then Approve, Edit (the arguments as JSON, checked before sending) and
 * Reject (with an optional message for the model). Once decided, it says
 * what was decided and by whom instead. The card is a region named by the
 * tool and the request, so that each card's buttons are told apart.
 */
export function ApprovalCard({
  approval,
  decision,
  now,
  onDecide,
}: {
  approval: HeldCall;
  decision: CardDecision | undefined;
  now: number;
  onDecide: Decide;
}) {
  const id = `approval-${approval.requestId}`;
  const [mode, setMode] = useState<Mode>('buttons');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const status = useRef<HTMLParagraphElement>(null);
  const decidedHere = useRef(false);
  const decided = decision !== undefined;
  useEffect(() => {
    // The button pressed is gone: the focus goes to what the press did (once), not to the page's start.
    if (!decided || !decidedHere.current) return;
    decidedHere.current = false;
    status.current?.focus();
  }, [decided]);

  const send = async (body: ApprovalDecisionBody) => {
    setBusy(true);
    setError(undefined);
    // Set before the decision is taken: the card may show it before `onDecide` returns.
    decidedHere.current = true;
    const refused = await onDecide(body);
    setBusy(false);
    if (refused === undefined) return;
    decidedHere.current = false;
    setError(refused);
  };
  const toggle = (to: Mode) => {
    setError(undefined);
    setMode((current) => (current === to ? 'buttons' : to));
  };
  return (
    <section class="card approval" aria-labelledby={`${id}-tool ${id}-request`}>
      <h3 id={`${id}-tool`}>
        <code>{approval.tool}</code>
      </h3>
      <HeldFacts approval={approval} requestId={`${id}-request`} now={decision ? undefined : now} />
      <ToolArguments
        name={approval.tool}
        args={argumentsText(decision?.arguments ?? approval.arguments)}
        held
      />
      {decision ? (
        <p class="approval-decided" role="status" tabIndex={-1} ref={status}>
          {decisionText(decision)}
        </p>
      ) : (
        <DecisionButtons
          id={id}
          mode={mode}
          busy={busy}
          onApprove={() => send({ decision: 'approve' })}
          onToggle={toggle}
        />
      )}
      {!decision && mode === 'edit' ? (
        <EditArguments id={`${id}-edit`} initial={approval.arguments} busy={busy} onSend={send} />
      ) : null}
      {!decision && mode === 'reject' ? (
        <RejectMessage id={`${id}-reject`} busy={busy} onSend={send} />
      ) : null}
      {error ? (
        <p role="alert" class="error-text">
          {error}
        </p>
      ) : null}
    </section>
  );
}

/** Why the call was held, its request (`requestId`: the element's id, which names the card), and while it waits the time left. */
function HeldFacts({
  approval,
  requestId,
  now,
}: {
  approval: HeldCall;
  requestId: string;
  now: number | undefined;
}) {
  return (
    <p class="approval-facts">
      <span>
        Held by the policy’s <code>{approval.reason}</code>
      </span>
      <span>
        Request <code id={requestId}>{approval.requestId}</code>
      </span>
      {approval.childRunId ? (
        <span>
          Asked by crew child{' '}
          <a href={runHref(approval.childRunId)} onClick={onLinkClick}>
            {approval.childRunId}
          </a>
        </span>
      ) : null}
      {now === undefined ? null : (
        <span>
          Time left: <span data-testid="countdown">{countdown(approval.expiresAt, now)}</span>, then{' '}
          {approval.onTimeout === 'approve' ? 'approved' : 'rejected'}
        </span>
      )}
    </p>
  );
}

/** Approve, and the two buttons that open Edit's and Reject's forms. */
function DecisionButtons({
  id,
  mode,
  busy,
  onApprove,
  onToggle,
}: {
  id: string;
  mode: Mode;
  busy: boolean;
  onApprove: () => void;
  onToggle: (mode: Mode) => void;
}) {
  return (
    <div class="approval-actions">
      <button type="button" class="approve" disabled={busy} onClick={onApprove}>
        Approve
      </button>
      <Disclosure id={`${id}-edit`} open={mode === 'edit'} busy={busy} onToggle={() => onToggle('edit')}>
        Edit
      </Disclosure>
      <Disclosure
        id={`${id}-reject`}
        open={mode === 'reject'}
        busy={busy}
        danger
        onToggle={() => onToggle('reject')}
      >
        Reject
      </Disclosure>
    </div>
  );
}

/** A button that opens a form under the card's buttons (and closes it again). */
function Disclosure({
  id,
  open,
  busy,
  danger = false,
  onToggle,
  children,
}: {
  id: string;
  open: boolean;
  busy: boolean;
  danger?: boolean;
  onToggle: () => void;
  children: string;
}) {
  return (
    <button
      type="button"
      class={danger ? 'danger' : undefined}
      aria-expanded={open}
      // Only while open: the form it names exists only then.
      aria-controls={open ? id : undefined}
      disabled={busy}
      onClick={onToggle}
    >
      {children}
    </button>
  );
}
