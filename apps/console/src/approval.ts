/**
 * Approval of tool calls as the run page shows it: which held calls get a
 * card, what a decision reads as, what an edit's text parses to, and what a
 * refused decision means. Pure, so the unit tests check it without a browser.
 *
 * A model turn's held calls are requested together and the run resumes once
 * each has a decision, so a card stays (showing its decision) while the run
 * still waits on another card of its turn, and all of them go when it moves on.
 */

import type { ApprovalDecisionKind, Run } from '@tether/protocol';
import type { ApprovalOutcome, HeldCall, TimelineItem } from './timeline.js';

/** One card: a held call (a crew child's names the child, the run to decide it on) and, once taken, its decision. */
export interface ApprovalCardModel {
  approval: HeldCall;
  decision?: ApprovalOutcome | undefined;
}

type ApprovalItem = Extract<TimelineItem, { kind: 'approval' }>;

/**
 * The cards of the turn the run waits on: the run's pending approvals (the
 * API's word on what still waits), with the turn's calls decided already
 * beside them (the timeline's, which has their decisions), in the order they
 * were asked. None once the run no longer waits on an approval.
 */
export function approvalCards(
  run: Pick<Run, 'status' | 'pendingApprovals'>,
  items: readonly TimelineItem[],
): ApprovalCardModel[] {
  if (run.status === 'waiting_for_children') return childCards(items);
  const pending = run.status === 'waiting_for_input' ? (run.pendingApprovals ?? []) : [];
  const first = pending[0];
  if (first === undefined) return [];
  const asked = items.filter((item): item is ApprovalItem => item.kind === 'approval');
  const batch = asked.find((item) => item.approval.requestId === first.requestId)?.batch;
  const cards: ApprovalCardModel[] = asked
    .filter((item) => batch !== undefined && item.batch === batch)
    .map((item) => ({ approval: item.approval, decision: item.decision }));
  // The run read before its events: a request the timeline does not hold yet still gets its card.
  for (const approval of pending) {
    if (!cards.some((card) => card.approval.requestId === approval.requestId)) cards.push({ approval });
  }
  return cards;
}

/**
 * A crew root's cards while it waits for its children: the calls its children hold, told on the
 * root's events. Each batch (a child's turn) that still has an undecided call of a child still
 * running keeps all its cards, decided ones too, as a run's own turn does.
 */
function childCards(items: readonly TimelineItem[]): ApprovalCardModel[] {
  const asked = items.filter(
    (item): item is ApprovalItem => item.kind === 'approval' && item.approval.childRunId !== undefined,
  );
  const open = new Set(asked.filter((item) => !item.decision && !item.childEnded).map((item) => item.batch));
  return asked
    .filter((item) => open.has(item.batch))
    .map((item) => ({ approval: item.approval, decision: item.decision }));
}

const DECIDED: Record<ApprovalDecisionKind, string> = {
  approve: 'Approved',
  edit: 'Edited',
  reject: 'Rejected',
};

/**
 * A decision in words: "Approved by acme", "Rejected" (sent from this page,
 * before its event names who), or "Decided at the deadline: rejected".
 */
export function decisionText(outcome: {
  decision: ApprovalDecisionKind;
  by?: string;
  timedOut?: boolean;
}): string {
  if (outcome.timedOut) return `Decided at the deadline: ${DECIDED[outcome.decision].toLowerCase()}`;
  return outcome.by ? `${DECIDED[outcome.decision]} by ${outcome.by}` : DECIDED[outcome.decision];
}

/** Held arguments as the tool views take them: JSON text (a string the model wrote that was not JSON stays as written). */
export function argumentsText(args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {});
}

/** Held arguments as the editor starts them: pretty JSON (or the model's text, which was not JSON, to mend). */
export function editorText(args: unknown): string {
  return typeof args === 'string' ? args : JSON.stringify(args ?? {}, null, 2);
}

/** An edit's text: the object to send, or what is wrong with it. */
export type EditedArguments =
  | { ok: true; arguments: Record<string, unknown> }
  | { ok: false; problem: string };

/** Parses an edit: it must be JSON, and a JSON object (a tool's arguments are always one). */
export function parseEditedArguments(text: string): EditedArguments {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      problem: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const what = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return {
      ok: false,
      problem: `The arguments must be a JSON object, such as {"path": "notes.md"}, not ${what}.`,
    };
  }
  return { ok: true, arguments: value as Record<string, unknown> };
}

/** What a 409 from the decision route means, by its code. */
const CONFLICTS: Record<string, string> = {
  ERR_APPROVAL_ALREADY_DECIDED:
    'A decision on this call was taken already (in another tab, or through the API).',
  ERR_APPROVAL_TIMED_OUT: 'The deadline passed, and the run’s policy decided this call.',
  ERR_APPROVAL_EXPIRED: 'The deadline for this decision passed: the run’s policy decides it.',
  ERR_APPROVAL_NOT_PENDING: 'The run no longer waits for this decision: it has ended.',
};

/**
 * A decision the API did not take, in words: a conflict (409: decided
 * already, the deadline passed, the run ended), after which the page reads
 * the run again, or anything else (a 400 naming the field an edit got wrong)
 * with the API's own message.
 */
export function refusalText(failure: unknown): { conflict: boolean; text: string } {
  const { status, code, message } = (typeof failure === 'object' && failure !== null ? failure : {}) as {
    status?: unknown;
    code?: unknown;
    message?: unknown;
  };
  if (status === 409) {
    const known = typeof code === 'string' ? CONFLICTS[code] : undefined;
    return { conflict: true, text: known ?? `The decision was not taken: ${String(message)}` };
  }
  return { conflict: false, text: typeof message === 'string' ? message : String(failure) };
}
