import type { Run, TetherClient } from '@tether/client';
import type { ApprovalDecisionBody, ApprovalDecisionKind } from '@tether/protocol';
import { useState } from 'preact/hooks';
import { approvalCards, refusalText } from './approval.js';
import { ApprovalCard } from './approval-card.js';
import './approvals.css';
import type { HeldCall, Timeline } from './timeline.js';
import { useNow } from './use-now.js';

/**
 * The tool calls a run holds for a decision, one card each, beside where a
 * pending question shows. A decision taken here is shown at once ("Approved")
 * and then with who took it, from the run's events; a card decided elsewhere
 * shows that decision too, while the run still waits on another card of its
 * turn. A decision the API refuses as a conflict (decided already, past the
 * deadline, the run ended) is said above the cards, and the run is read again.
 */
export function Approvals({
  client,
  run,
  timeline,
  onChanged,
}: {
  client: TetherClient;
  run: Run;
  timeline: Timeline;
  onChanged: (run: Run) => void;
}) {
  const [notice, setNotice] = useState<string>();
  const [sent, setSent] = useState<ReadonlyMap<string, ApprovalDecisionKind>>(new Map());
  const cards = approvalCards(run, timeline.items);
  const now = useNow(cards.some((card) => card.decision === undefined));

  const decide = async (approval: HeldCall, body: ApprovalDecisionBody): Promise<string | undefined> => {
    setNotice(undefined);
    const outcome = await sendDecision(client, run.id, approval, body);
    if (outcome.refused !== undefined) return outcome.refused;
    if (outcome.late !== undefined) setNotice(outcome.late);
    else setSent((current) => new Map(current).set(approval.requestId, body.decision));
    try {
      onChanged(await client.get(run.id));
    } catch {
      // The run page's feed reads it again on the decision's event, and says when it cannot.
    }
    return undefined;
  };

  return (
    <>
      {notice ? (
        <p role="alert" class="card approval-notice">
          {notice}
        </p>
      ) : null}
      {cards.length > 0 ? (
        <section class="approvals" aria-labelledby="approvals-heading">
          <h2 id="approvals-heading">
            {cards.length === 1 ? 'A tool call waits for your decision' : 'Tool calls wait for your decision'}
          </h2>
          {cards.map(({ approval, decision }) => {
            const mine = sent.get(approval.requestId);
            return (
              <ApprovalCard
                key={approval.requestId}
                approval={approval}
                decision={decision ?? (mine === undefined ? undefined : { decision: mine })}
                now={now}
                onDecide={(body) => decide(approval, body)}
              />
            );
          })}
        </section>
      ) : null}
    </>
  );
}

/**
 * Sends a decision on a held call (a crew child's is decided on the child): `{}` once taken;
 * `refused`, what the card says (a 400 naming the field an edit got wrong); `late`, the notice
 * above the cards for a decision that came too late (decided already, past the deadline, the run
 * ended).
 */
export async function sendDecision(
  client: TetherClient,
  runId: string,
  approval: HeldCall,
  body: ApprovalDecisionBody,
): Promise<{ refused?: string; late?: string }> {
  try {
    await client.decide(approval.childRunId ?? runId, approval.requestId, body);
    return {};
  } catch (failure) {
    const refusal = refusalText(failure);
    if (!refusal.conflict) return { refused: refusal.text };
    return { late: `${approval.tool} (${approval.requestId}): ${refusal.text}` };
  }
}
