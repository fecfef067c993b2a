import type { ApprovalDecision, ChildResult, PendingApproval, PendingToolCall } from '@tether/protocol';

/** How one delegated task ended, as the delegating run's tool result lists it (see `ChildResult`). */
export type CrewResultEntry = ChildResult;

/*
 * The waitpoint: what a run waits on from the outside world, one at a time.
 *
 * A run that cannot go on without something from outside (an answer, a
 * client's tool output, its crew children's results, a decision on a tool
 * call) waits on a waitpoint of
 * one or more pending requests. Each request has a kind, an id, the model's
 * tool call it answers, and a deadline (the children's deadline is the
 * crew's, kept with the children). The checkpoint holds the waitpoint; the
 * attempt that resumes gets one resolution per request (its value, or that
 * its deadline passed) and records each as its call's tool result, in the
 * requests' order, before anything else runs. What a kind's resolution
 * becomes for the model is the attempt loop's (run-attempt.ts).
 */

/** A question the run asked with `clarify`: the answer becomes the call's result. */
export interface QuestionRequest {
  kind: 'question';
  requestId: string;
  /** The `clarify` call that asked it. */
  callId: string;
  question: string;
  choices: string[];
  /** ISO time after which the run resumes with the timeout message. */
  expiresAt: string;
}

/** A client tool call of the last model turn: the client's output becomes the call's result. */
export interface ToolOutputRequest extends PendingToolCall {
  kind: 'tool_output';
}

/**
 * The children of a `delegate_task` or `delegate_parallel` call: their
 * results become the call's result. Its request id is the call's id.
 */
export interface ChildrenRequest {
  kind: 'children';
  requestId: string;
  callId: string;
  name: 'delegate_task' | 'delegate_parallel';
  /** The tasks in order, each with the id of the child run that carries it out. */
  tasks: { goal: string; context?: string; toolsets?: string[]; childRunId: string }[];
}

/**
 * A tool call of the last model turn that the run's approval policy holds for a decision: the
 * decision says whether (and with which arguments) the call runs when the turn's calls go on.
 */
export interface ApprovalRequest extends PendingApproval {
  kind: 'approval';
}

export type WaitRequest = QuestionRequest | ToolOutputRequest | ChildrenRequest | ApprovalRequest;
export type WaitRequestKind = WaitRequest['kind'];

/** The requests a run waits on (all of one model turn), in the order their results are recorded. */
export interface Waitpoint {
  requests: WaitRequest[];
}

/**
 * How one request of a waitpoint was resolved: its deadline passed, or its
 * value came (an answer, a client's output, the children's results).
 */
export type WaitResolution =
  | { requestId: string; timedOut: true }
  | { requestId: string; answer: string }
  | { requestId: string; output: string; isError: boolean }
  | { requestId: string; results: CrewResultEntry[] }
  | { requestId: string; decision: ApprovalDecision };

/** The question the waitpoint holds, if it waits on one. */
export function questionOf(waitpoint: Waitpoint | undefined): QuestionRequest | undefined {
  return waitpoint?.requests.find((request): request is QuestionRequest => request.kind === 'question');
}

/** The client tool calls the waitpoint holds, in call order (empty when it waits on none). */
export function toolOutputsOf(waitpoint: Waitpoint | undefined): ToolOutputRequest[] {
  return (waitpoint?.requests ?? []).filter(
    (request): request is ToolOutputRequest => request.kind === 'tool_output',
  );
}

/** The tool calls the waitpoint holds for a decision, in call order (empty when it waits on none). */
export function approvalsOf(waitpoint: Waitpoint | undefined): ApprovalRequest[] {
  return (waitpoint?.requests ?? []).filter(
    (request): request is ApprovalRequest => request.kind === 'approval',
  );
}

/** The delegation the waitpoint holds, if it waits on children. */
export function childrenOf(waitpoint: Waitpoint | undefined): ChildrenRequest | undefined {
  return waitpoint?.requests.find((request): request is ChildrenRequest => request.kind === 'children');
}
