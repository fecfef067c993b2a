import type { TetherClient } from '@tether/client';
import type { ApprovalDecisionBody, ApprovalDecisionKind } from '@tether/protocol';
import { useState } from 'preact/hooks';
import { ApprovalCard } from './approval-card.js';
import { sendDecision } from './approvals.js';
import type { TimelineItem } from './timeline.js';
import { useNow } from './use-now.js';

type ApprovalItem = Extract<TimelineItem, { kind: 'approval' }>;

/**
 * A call a session's run held for approval, in the chat where it was asked: the run page's card
 * (Approve, Edit, Reject; a crew child's decided on the child), its decision once taken, or, when
 * the run (or the child) ended before anyone decided, that it never was. A decision the API
 * refuses as a conflict (decided elsewhere first, past the deadline) is said above the card.
 */
export function HeldCall({
  client,
  runId,
  item,
  ended,
}: {
  client: TetherClient;
  runId: string;
  item: ApprovalItem;
  ended: boolean;
}) {
  const [sent, setSent] = useState<ApprovalDecisionKind>();
  const [notice, setNotice] = useState<string>();
  const undecided = item.decision === undefined && sent === undefined;
  const now = useNow(undecided && !ended);
  if (undecided && (ended || item.childEnded)) {
    return (
      <div class="card decided">
        <p>
          <span class="who">Held:</span> <code>{item.approval.tool}</code>, not decided: the run ended first.
        </p>
      </div>
    );
  }
  const decide = async (body: ApprovalDecisionBody): Promise<string | undefined> => {
    setNotice(undefined);
    const outcome = await sendDecision(client, runId, item.approval, body);
    if (outcome.refused !== undefined) return outcome.refused;
    if (outcome.late !== undefined) setNotice(outcome.late);
    else setSent(body.decision);
    return undefined;
  };
  return (
    <>
      {notice ? (
        <p role="alert" class="card approval-notice">
          {notice}
        </p>
      ) : null}
      <ApprovalCard
        approval={item.approval}
        decision={item.decision ?? (sent === undefined ? undefined : { decision: sent })}
        now={now}
        onDecide={decide}
      />
    </>
  );
}
