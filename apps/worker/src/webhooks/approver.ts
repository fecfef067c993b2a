import { Value } from '@sinclair/typebox/value';
import type { OutboundAnswer } from '@tether/outbound';
import {
  type ApprovalDecision,
  type ApprovalDecisionBody,
  ApprovalDecisionBodySchema,
  TetherError,
  WEBHOOK_DEFAULTS,
} from '@tether/protocol';
import { answerTokenHash, type TakenDelivery } from '@tether/store/webhooks';
import type { Logger } from 'pino';

/**
 * An approval policy's approver: a webhook endpoint of the tenant the policy names. The dispatch
 * sends it each `approval.requested` of the run, whatever it subscribes to (the store's
 * `webhookDispatch`); its pump reads the body of a 2xx answer to such a delivery, and a body that
 * is a decision (`ApprovalDecisionBodySchema`) is taken with the delivery's answer token, by
 * `approver:<endpoint id>`. Anything else leaves the request waiting for a person: a body that is
 * not a decision (the delivery is delivered all the same), a failed attempt (retried as any
 * delivery is, and a retry's decision still counts), a decision taken already (the first wins).
 */

/** Takes a decision with an answer token: `RunService.decideWithToken`, which dispatches the run's new events too. */
export interface ApproverDecisions {
  decideWithToken(
    runId: string,
    requestId: string,
    decision: ApprovalDecision,
    tokenHash: string,
  ): Promise<void>;
}

/** The approval request a delivery asks its endpoint to decide, with the delivery's answer token. */
export interface AskedDecision {
  runId: string;
  requestId: string;
  token: string;
}

/** The `data` of an `approval.requested` payload, as far as the approver's pump reads it. */
interface RequestedData {
  requestId?: unknown;
  approver?: unknown;
}

/**
 * The request `delivery` asks `endpointId` to decide: an `approval.requested` that names it as
 * the approver, sent with an answer token. Undefined for any other delivery (its payload is
 * parsed only when it is an approval request with a token). A crew root's copy of a child's
 * request is never delivered (the dispatch leaves it out): the child's own delivery asks.
 */
export function askedToDecide(
  endpointId: string,
  delivery: TakenDelivery,
  token: string,
): AskedDecision | undefined {
  if (delivery.type !== 'approval.requested') return undefined;
  let data: RequestedData | undefined;
  try {
    data = (JSON.parse(delivery.payload) as { data?: RequestedData }).data;
  } catch {
    return undefined;
  }
  if (data?.approver !== endpointId) return undefined;
  if (typeof data.requestId !== 'string') return undefined;
  return { runId: delivery.runId, requestId: data.requestId, token };
}

/**
 * The decision in an approver's 2xx answer: its body (at most `maxResponseBytes` read) when it is
 * JSON that `ApprovalDecisionBodySchema` accepts, else undefined (a body that could not be read
 * included).
 */
export async function decisionIn(answer: OutboundAnswer): Promise<ApprovalDecisionBody | undefined> {
  let body: unknown;
  try {
    body = JSON.parse(await answer.text(WEBHOOK_DEFAULTS.maxResponseBytes));
  } catch {
    return undefined;
  }
  return Value.Check(ApprovalDecisionBodySchema, body) ? body : undefined;
}

/**
 * Takes the approver's decision on the request it was asked, once its delivery's attempt is
 * known to be delivered. Never throws: a decision refused (taken already, past the deadline, the
 * run ended, the token used) is told at info, a failure to take it at warn; either way the
 * request goes on as it was.
 */
export async function takeDecision(
  decisions: ApproverDecisions,
  log: Logger,
  endpointId: string,
  asked: AskedDecision,
  decision: ApprovalDecisionBody | undefined,
): Promise<void> {
  const fields = { endpointId, runId: asked.runId, requestId: asked.requestId };
  if (!decision) {
    log.info(fields, "the approver's answer is not a decision; the request waits for a person");
    return;
  }
  const by = `approver:${endpointId}`;
  try {
    await decisions.decideWithToken(
      asked.runId,
      asked.requestId,
      { ...decision, by },
      answerTokenHash(asked.token),
    );
    log.info({ ...fields, decision: decision.decision }, 'the approver decided');
  } catch (error) {
    if (error instanceof TetherError) {
      log.info({ ...fields, code: error.code, reason: error.message }, "the approver's decision was refused");
    } else {
      log.warn({ ...fields, err: error }, "the approver's decision could not be taken; the request waits");
    }
  }
}
