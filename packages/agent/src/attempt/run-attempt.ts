/**
 * The attempt loop: model turn, then its tool calls in order, then the next
 * turn, until the model answers without tool calls, a limit is reached, the
 * attempt is cancelled, `clarify` suspends it, the model calls client tools
 * (the attempt ends waiting for their outputs), a delegation hands its tasks
 * to child runs, or `escalate` ends it. With `onClarifyRequest`, `clarify` never
 * suspends: the host answers in process and the loop goes on. Without `crew`,
 * the delegate tools run as ordinary tools (their handlers say the host cannot
 * delegate).
 *
 * The checkpoint is the whole state and is updated in place; `saveCheckpoint`
 * runs after every model turn that calls tools and every tool result, so a
 * resumed attempt never repeats a finished tool call. The final answer's turn
 * is not saved through it: a `completed` outcome leaves the final checkpoint in
 * place for the caller to store with the run's end (the worker does both in one
 * Redis step). It knows nothing of queues, HTTP or
 * Redis: the worker maps the outcome onto the queue.
 */
import { Value } from '@sinclair/typebox/value';
import type {
  ApprovalDecision,
  ApprovalDecisionBody,
  ClientTool,
  Locale,
  PendingApproval,
  PendingToolCall,
} from '@tether/protocol';
import {
  ApprovalDecisionBodySchema,
  CLIENT_TOOL_LIMITS,
  type EmitEvent,
  newId,
  TetherError,
  type ToolCall,
  type Usage,
} from '@tether/protocol';
import {
  type CompiledApprovalPolicy,
  type CompiledClientTool,
  type CrewTask,
  compileClientTools,
  executeTool,
  parseToolArguments,
  SUBMIT_RESULT_TOOL,
  type Tool,
  type ToolResult,
} from '@tether/tools';
import { AgentError } from '../errors.js';
import {
  approvalEditedNote,
  approvalRejectedMessage,
  approvalTimedOutMessage,
  clarifyFailedMessage,
  clarifyTimeoutMessage,
  escalatedToolResult,
  resultAcceptedMessage,
  resultNotRunMessage,
  resultRequiredMessage,
  toolTimeoutMessage,
} from '../prompt/system-prompt.js';
import type { ModelPrices } from '../providers/model-profiles.js';
import type { ModelProvider, ModelResponse, ModelTool } from '../providers/model-provider.js';
import {
  askInProcess,
  type ClarifyRequestHandler,
  type InProcessOutcome,
  inProcess,
} from './ask-in-process.js';
import {
  type Checkpoint,
  type PendingClarifyState,
  type PendingDelegation,
  unansweredToolCalls,
} from './checkpoint.js';
import {
  type ArchiveToolResult,
  COMPACT_TARGET,
  compactTranscript,
  DEFAULT_COMPACT_AT,
  isContextOverflow,
  RequestCounter,
} from './compaction.js';
import type { CrewResultEntry, Waitpoint, WaitRequest, WaitResolution } from './waitpoint.js';

export interface AttemptLimits {
  /** Model turns per run. Default 50. */
  maxSteps: number;
  /** Model output tokens per run. Default 200,000. */
  maxOutputTokens: number;
  /** Active time per run in ms (waiting for a human not counted). Default 30 minutes. */
  wallClockMs: number;
  /** Characters of one tool result kept in the transcript; longer ones keep head and tail. Default 30,000. */
  maxToolResultChars: number;
  /** Tokens per run, input and output together (`limits.maxTotalTokens`); none by default. */
  maxTotalTokens?: number | undefined;
  /** US dollars per run, by the provider's prices (`limits.maxCostUsd`); none by default. */
  maxCostUsd?: number | undefined;
}

export const DEFAULT_ATTEMPT_LIMITS: AttemptLimits = {
  maxSteps: 50,
  maxOutputTokens: 200_000,
  wallClockMs: 30 * 60_000,
  maxToolResultChars: 30_000,
};

/** What a run may delegate: the host's limits and child run ids. */
export interface CrewOptions {
  /** Tasks one delegation may hold (TETHER_CREW_MAX_PARALLEL). */
  maxParallel: number;
  /** Children this run may still start over its life (TETHER_CREW_MAX_CHILDREN minus those started). */
  remainingChildren: number;
  /** A new child run id (the worker's newChildRunId(runId)). */
  newChildId: () => string;
  /** Optional last check of the tasks (e.g. a replay run has no script for a goal): a message for the model refuses the call. */
  refuse?: (tasks: CrewTask[]) => string | undefined;
}

/** How a resumed attempt learns the fate of one client tool call it waited on. */
export type ToolCallResolution = Extract<WaitResolution, { output: string } | { timedOut: true }>;

/** How a resumed attempt learns the fate of the question it suspended on. */
export type ClarifyResolution = Extract<WaitResolution, { answer: string } | { timedOut: true }>;

export interface AttemptParams {
  /** Updated in place. */
  checkpoint: Checkpoint;
  provider: ModelProvider;
  tools: Tool[];
  signal: AbortSignal;
  emit: EmitEvent;
  /**
   * Persists the checkpoint; throw to stop the attempt (lost ownership, cancel requested).
   * Not called for the final answer's turn: on `completed`, `checkpoint` holds the final state.
   */
  saveCheckpoint: (checkpoint: Checkpoint) => Promise<void>;
  limits?: Partial<AttemptLimits>;
  /**
   * `suspend` (default): `clarify` ends the attempt with a `suspended` outcome.
   * `return`: no channel to a human; clarify's own `execute` runs and the run
   * completes with the question as its output.
   * Ignored when `onClarifyRequest` is given.
   */
  interaction?: 'suspend' | 'return';
  /**
   * Answers `clarify` in process (design 5.3, embedding without a queue): the
   * attempt awaits it and its answer becomes clarify's tool result. Past
   * `clarifyTimeoutMs` the result is the timeout message; when it rejects, the
   * result says the question could not be answered and why (`ok: false`); in
   * both cases the run goes on. An abort while it waits ends the attempt
   * `cancelled`. Overrides `interaction`. The wait is not active time.
   */
  onClarifyRequest?: ClarifyRequestHandler | undefined;
  /** How long a human has to answer a clarify question (ms). Default 600,000 (10 minutes; the design says 20 s). */
  clarifyTimeoutMs?: number;
  /**
   * How each request of the waitpoint this attempt resumes from was resolved
   * (`checkpoint.waitpoint`): the answer or timeout of a question, the output
   * or timeout of each client tool call, the results of a delegation's children.
   */
  resolutions?: readonly WaitResolution[] | undefined;
  /**
   * Set when the host can delegate: a valid `delegate_task` or
   * `delegate_parallel` call within the limits then ends the attempt with a
   * `delegating` outcome, the tasks saved in `checkpoint.pendingDelegation`.
   * Unset, the two run as ordinary tools.
   */
  crew?: CrewOptions | undefined;
  /**
   * Client-executed tools (the run's `tools`), offered to the model beside
   * `tools`. A call's arguments are checked against its schema (invalid: a
   * tool error for the model, the client never asked); the valid calls of one
   * model turn end the attempt with a `tool_calls` outcome, all of them at
   * once, once the turn's other calls have run.
   */
  clientTools?: readonly ClientTool[] | undefined;
  /** How long the client has to post a tool output (ms). Default 10 minutes. */
  toolTimeoutMs?: number | undefined;
  /**
   * The run's approval policy: before a turn's calls run, those it holds that have no decision yet
   * end the attempt with an `approvals` outcome, all of them at once (the turn's other calls wait
   * with them, so results stay in call order). On resume each decision (in `resolutions`) says
   * whether the call runs, with which arguments, or is refused.
   */
  approval?: CompiledApprovalPolicy | undefined;
  /**
   * Decides in process on the calls `approval` holds (an embedded agent, design 5.3): awaited for
   * each in call order against the policy's deadline (then its `onTimeout` decides); a handler that
   * throws or answers with no decision rejects the call, saying why. `approval.requested` and
   * `approval.resolved` are emitted as a host's would be; the wait is not active time. Without it,
   * held calls end the attempt with an `approvals` outcome for the host to wait on.
   */
  onApprovalRequest?: ApprovalRequestHandler | undefined;
  /**
   * The messages sent to the live run since it last looked (steering): taken before each model
   * turn, a turn boundary where every call of the last turn has its result, and put in the
   * transcript as the user's (`message.delivered` each), saved before the turn.
   */
  messages?: { take(): Promise<{ messageId: string; content: string }[]> } | undefined;
  locale?: Locale;
  /**
   * Whether the attempt was stopped by its host rather than by the user (the
   * worker shutting down, or its lock lost). Asked when a tool call returns
   * after `signal` fired: when true, the call's result is not recorded, so the
   * call stays unanswered in the checkpoint and the next owner runs it again,
   * exactly as after a crash. When false (a user's cancel), the "Cancelled"
   * result is recorded.
   */
  interrupted?: () => boolean;
  /**
   * Told when a call of one of `tools` starts (its arguments not yet checked),
   * with the MCP server of a server's tool; the function it returns is told the
   * call's result when it ends (metrics, traces). Client tools, clarify's suspension, delegations and `escalate`
   * are not tool runs and are not told.
   */
  onToolCall?:
    | ((
        name: string,
        server: string | undefined,
      ) => (result: { ok: boolean; code?: string | undefined }) => void)
    | undefined;
  /**
   * Keeping the transcript within the model's context window (see compaction.ts). Unset: the
   * request is never counted, and a provider's refusal of it as too long is a bare
   * `ERR_MODEL_BAD_REQUEST`.
   */
  context?: ContextOptions | undefined;
  /**
   * A structured result (the run's `output`): the run ends only through a valid call of
   * `submit_result`, which must be one of `tools` (`createSubmitResultTool` of the run's schema).
   * A valid call completes the run with its arguments as `result`, and the turn's calls still
   * without a result get one saying they did not run. An invalid call (its validation errors are
   * its result) and a final answer in plain text (the model is then reminded, as the user, to call
   * it) are failed attempts, counted in `checkpoint.outputAttempts`; the `maxAttempts`-th fails the
   * run with `ERR_OUTPUT_INVALID`.
   */
  output?: { maxAttempts: number } | undefined;
  /**
   * Asked at each turn boundary, after the run's own limits and before the model turn (every call
   * of the last turn has its result): an error fails the attempt with it, what the run did kept
   * (the host's limits beyond the run's own, such as its tenant's budgets).
   */
  beforeTurn?: (() => Promise<TetherError | undefined>) | undefined;
  /** Clock, for tests. */
  now?: () => number;
}

/** How an attempt keeps its transcript within the model's context window. */
export interface ContextOptions {
  /**
   * Whether the transcript is compacted (the run's `compaction`, default true). Off, a request
   * past the window fails the run with `ERR_CONTEXT_EXHAUSTED`.
   */
  compaction: boolean;
  /**
   * Tokens the model's context holds (the profile's `contextWindow`, else its model family's).
   * Unknown: learnt from the first refusal of a request as too long.
   */
  window?: number | undefined;
  /** Share of the window past which the transcript is compacted. Default 0.8. */
  compactAt?: number | undefined;
  /** Saves a tool result before it is pruned, where the run can read it back (its path). */
  archive?: ArchiveToolResult | undefined;
}

export type AttemptOutcome =
  /**
   * `escalated`: a crew child ended with `escalate`, its reason as the output. `result`: a run with
   * `output`, the arguments of its accepted `submit_result` call.
   */
  | { status: 'completed'; output: string; escalated?: true; result?: unknown }
  | { status: 'suspended'; clarify: PendingClarifyState }
  /** The turn's client tool calls, saved in `checkpoint.pendingToolCalls`: the host waits for their outputs. */
  | { status: 'tool_calls'; calls: PendingToolCall[] }
  /** The tasks are saved in the checkpoint; the host starts a child run per task and resumes with their results. */
  | { status: 'delegating'; delegation: PendingDelegation }
  /** The turn's calls the approval policy holds, saved in the checkpoint's waitpoint: the host waits for decisions. */
  | { status: 'approvals'; approvals: PendingApproval[] }
  | { status: 'failed'; error: TetherError }
  | { status: 'cancelled' };

const CLARIFY = 'clarify';
const ESCALATE = 'escalate';
const DELEGATES: ReadonlySet<string> = new Set(['delegate_task', 'delegate_parallel']);

/** Runs one attempt of a run. Never throws: every ending is an outcome. */
export async function runAttempt(params: AttemptParams): Promise<AttemptOutcome> {
  const attempt = new Attempt(params);
  try {
    attempt.offerClientTools();
    await attempt.resume();
    for (;;) {
      if (params.signal.aborted) return { status: 'cancelled' };
      const ended = (await attempt.runTurnCalls()) ?? attempt.limitReached();
      if (ended) return ended;
      const refused = await params.beforeTurn?.();
      if (refused) return { status: 'failed', error: refused };
      const answered = await attempt.modelTurn();
      if (answered) return answered;
    }
  } catch (error) {
    if (params.signal.aborted && (!(error instanceof AgentError) || error.code === 'ERR_MODEL_ABORTED')) {
      return { status: 'cancelled' };
    }
    if (error instanceof TetherError) return { status: 'failed', error };
    return {
      status: 'failed',
      error: new AgentError('ERR_AGENT_INTERNAL', `The attempt failed: ${String(error)}`, { cause: error }),
    };
  }
}

/** A valid client tool call of the turn, requested with the turn's others once the rest have run. */
type ClientCall = { call: ToolCall; args: Record<string, unknown> };

/**
 * One attempt's state: its parameters and limits, the tools offered to the
 * model, and the clock of its active time. Its steps read as the loop does:
 * resume, run the turn's calls, check the limits, take a model turn.
 */
class Attempt {
  readonly #params: AttemptParams;
  readonly #limits: AttemptLimits;
  readonly #now: () => number;
  readonly #locale: Locale;
  readonly #clarifyTimeoutMs: number;
  readonly #tools: Map<string, Tool>;
  readonly #clientTools = new Map<string, CompiledClientTool>();
  readonly #modelTools: ModelTool[];
  readonly #started: number;
  readonly #activeBefore: number;
  /** Time spent waiting for an in-process answer: a human's time, not the run's. */
  #waitedMs = 0;
  /** The note before each result of a call that runs with a reviewer's arguments, by call id. */
  readonly #edited = new Map<string, string>();
  /** Counts each request's tokens, for compaction. */
  readonly #counter = new RequestCounter();
  /** The model's context window, as far as it is known (see {@link ContextOptions.window}). */
  #window: number | undefined;

  constructor(params: AttemptParams) {
    this.#params = params;
    this.#limits = { ...DEFAULT_ATTEMPT_LIMITS, ...params.limits };
    this.#now = params.now ?? Date.now;
    this.#locale = params.locale ?? 'en';
    this.#clarifyTimeoutMs = params.clarifyTimeoutMs ?? 600_000;
    this.#started = this.#now();
    this.#activeBefore = params.checkpoint.activeMs;
    this.#tools = new Map(params.tools.map((tool) => [tool.name, tool]));
    this.#modelTools = params.tools.map((tool) => ({
      name: tool.schema.name,
      description: tool.schema.description,
      parameters: tool.schema.parameters,
    }));
    this.#window = params.context?.window;
  }

  get #checkpoint(): Checkpoint {
    return this.#params.checkpoint;
  }

  #tick(): void {
    this.#checkpoint.activeMs = this.#activeBefore + (this.#now() - this.#started) - this.#waitedMs;
  }

  async #save(): Promise<void> {
    this.#tick();
    await this.#params.saveCheckpoint(this.#checkpoint);
  }

  #record(call: ToolCall, result: { ok: boolean; content: string }, server?: string | undefined): void {
    // A call that ran with a reviewer's arguments says so first.
    const note = this.#edited.get(call.id);
    this.#edited.delete(call.id);
    const said = note === undefined ? result : { ...result, content: note + result.content };
    recordToolResult(this.#params, this.#checkpoint, call.id, call.name, said, this.#limits, { server });
  }

  #announce(call: ToolCall): void {
    this.#params.emit({
      type: 'tool.call',
      data: { callId: call.id, name: call.name, arguments: call.arguments },
    });
  }

  /** The run's client tools, checked at submit, compiled here (a schema that no longer compiles fails the run). */
  offerClientTools(): void {
    for (const tool of compileClientTools(this.#params.clientTools ?? [])) {
      if (this.#tools.has(tool.name)) continue;
      this.#clientTools.set(tool.name, tool);
      this.#modelTools.push({ name: tool.name, description: tool.description, parameters: tool.parameters });
    }
  }

  /** The waitpoint the run waited on, if any: each request's result recorded (see resumeWaitpoint). */
  async resume(): Promise<void> {
    if (!this.#checkpoint.waitpoint) return;
    resumeWaitpoint(this.#params, this.#checkpoint.waitpoint, this.#limits, this.#locale);
    this.#checkpoint.waitpoint = undefined;
    await this.#save();
  }

  /**
   * The calls of the last turn that have no result yet: all of them after a
   * model turn, the rest of them after a resume. Valid client tool calls wait
   * until the turn's other calls have run, then are requested together. An
   * outcome when the attempt ends here.
   */
  async runTurnCalls(): Promise<AttemptOutcome | undefined> {
    const { signal } = this.#params;
    const asked = await this.#askApprovals();
    if (asked) return asked;
    const clientCalls: ClientCall[] = [];
    for (const call of unansweredToolCalls(this.#checkpoint)) {
      if (signal.aborted) return { status: 'cancelled' };
      const ended = await this.#runCall(call, clientCalls);
      if (ended) return ended;
    }
    if (signal.aborted) return { status: 'cancelled' };
    if (clientCalls.length > 0) return this.#requestClientCalls(clientCalls);
    this.#tick();
    return undefined;
  }

  /**
   * The turn's calls the approval policy holds that have no decision yet (calls of tools the run
   * has), asked together before any call of the turn runs: an `approvals` outcome, or undefined.
   */
  async #askApprovals(): Promise<AttemptOutcome | undefined> {
    const policy = this.#params.approval;
    if (!policy) return undefined;
    const decided = this.#checkpoint.decisions ?? {};
    const expiresAt = new Date(this.#now() + policy.timeoutMs).toISOString();
    const approvals: PendingApproval[] = [];
    for (const call of unansweredToolCalls(this.#checkpoint)) {
      if (decided[call.id] || !(this.#tools.has(call.name) || this.#clientTools.has(call.name))) continue;
      const reason = policy.reasonFor(call);
      if (reason === undefined) continue;
      approvals.push({
        requestId: newId('apr'),
        callId: call.id,
        tool: call.name,
        arguments: parsedArguments(call.arguments),
        reason,
        expiresAt,
        onTimeout: policy.onTimeout,
        ...(policy.approver ? { approver: policy.approver } : {}),
      });
    }
    if (approvals.length === 0) return undefined;
    const handler = this.#params.onApprovalRequest;
    if (handler) return this.#decideInProcess(handler, policy, approvals);
    this.#checkpoint.waitpoint = {
      requests: approvals.map((approval) => ({ kind: 'approval', ...approval })),
    };
    await this.#save();
    // The host records the requests and appends `approval.requested` for each in one step.
    return { status: 'approvals', approvals };
  }

  /** The held calls decided in process, one after another; the attempt goes on (or is cancelled). */
  async #decideInProcess(
    handler: ApprovalRequestHandler,
    policy: CompiledApprovalPolicy,
    approvals: PendingApproval[],
  ): Promise<AttemptOutcome | undefined> {
    const { emit, signal } = this.#params;
    for (const approval of approvals) {
      emit({ type: 'approval.requested', data: approval });
      const asked = this.#now();
      const ask = (unwanted: AbortSignal) => handler(approval, { signal: unwanted });
      const reply = await inProcess(ask, { signal, timeoutMs: policy.timeoutMs }, 'The approval request');
      this.#waitedMs += this.#now() - asked;
      if (reply.kind === 'aborted') return { status: 'cancelled' };
      const decision = inProcessDecision(reply, policy.onTimeout);
      this.#checkpoint.decisions = { ...this.#checkpoint.decisions, [approval.callId]: decision };
      emit({ type: 'approval.resolved', data: { requestId: approval.requestId, ...decision } });
    }
    await this.#save();
    return undefined;
  }

  /**
   * A call's decision, if it waited for one: a refused call's result is recorded (`refused`); an
   * edited call goes on with the reviewer's arguments; any other call goes on as the model made it.
   */
  async #decided(call: ToolCall): Promise<ToolCall | 'refused'> {
    const decision = this.#checkpoint.decisions?.[call.id];
    if (!decision) return call;
    if (decision.decision === 'reject') {
      this.#announce(call);
      const content = decision.timedOut
        ? approvalTimedOutMessage(this.#locale, call.name)
        : approvalRejectedMessage(this.#locale, call.name, decision.message);
      this.#record(call, { ok: false, content });
      await this.#save();
      return 'refused';
    }
    if (decision.decision !== 'edit') return call;
    const args = JSON.stringify(decision.arguments);
    this.#edited.set(call.id, approvalEditedNote(this.#locale, args));
    return { ...call, arguments: args };
  }

  /** One call of the turn, by what it is; an outcome when it ends the attempt. */
  async #runCall(asked: ToolCall, clientCalls: ClientCall[]): Promise<AttemptOutcome | undefined> {
    const call = await this.#decided(asked);
    if (call === 'refused') return undefined;
    const tool = this.#tools.get(call.name);
    const client = tool ? undefined : this.#clientTools.get(call.name);
    if (client) {
      const parsed = client.parse(call.arguments);
      if (parsed.ok) {
        clientCalls.push({ call, args: parsed.args });
        return undefined;
      }
      // Invalid arguments: the model is told, the client never bothered.
      this.#announce(call);
      this.#record(call, parsed.result);
      await this.#save();
      return undefined;
    }
    if (tool && this.#params.output && call.name === SUBMIT_RESULT_TOOL)
      return this.#submitResult(this.#params.output, tool, call);
    if (tool && this.#params.crew && DELEGATES.has(call.name))
      return this.#delegate(this.#params.crew, tool, call);
    if (tool && call.name === ESCALATE) {
      const escalated = await this.#escalate(tool, call);
      if (escalated) return escalated;
      // Invalid arguments: the tool below gives the model its validation error.
    }
    if (tool && call.name === CLARIFY) {
      const question = clarifyQuestion(tool, call);
      if (question) return this.#clarify(tool, call, question);
    }
    return this.#runToolCall(tool, call);
  }

  async #delegate(crew: CrewOptions, tool: Tool, call: ToolCall): Promise<AttemptOutcome | undefined> {
    this.#announce(call);
    const planned = planDelegation(crew, tool, call);
    if ('refused' in planned) {
      this.#record(call, planned.refused);
      await this.#save();
      return undefined;
    }
    const delegation = planned.delegation;
    this.#checkpoint.waitpoint = {
      requests: [{ kind: 'children', requestId: delegation.callId, ...delegation }],
    };
    await this.#save();
    // The host creates the children and appends `child.started` for each.
    return { status: 'delegating', delegation: planned.delegation };
  }

  async #escalate(tool: Tool, call: ToolCall): Promise<AttemptOutcome | undefined> {
    const parsed = parseToolArguments(tool.schema, call.arguments);
    if (!parsed.ok) return undefined;
    this.#announce(call);
    this.#record(call, { ok: true, content: escalatedToolResult(this.#locale) });
    await this.#save();
    return { status: 'completed', output: (parsed.args as { reason: string }).reason, escalated: true };
  }

  /**
   * A `submit_result` call (the run has `output`). Valid: the run completes with its arguments as
   * the result, and its output is the text the model wrote in that turn (else the result's JSON).
   * Invalid: its validation errors are its result, and it is a failed attempt (see `#failedAttempt`).
   */
  async #submitResult(
    output: { maxAttempts: number },
    tool: Tool,
    call: ToolCall,
  ): Promise<AttemptOutcome | undefined> {
    this.#announce(call);
    const parsed = tool.parseArguments?.(call.arguments) ?? parseToolArguments(tool.schema, call.arguments);
    if (!parsed.ok) {
      const failed = this.#failedAttempt(output, parsed.result.content);
      if (failed) this.#leaveTurn(call, parsed.result);
      else this.#record(call, parsed.result);
      await this.#save();
      return failed;
    }
    this.#leaveTurn(call, { ok: true, content: resultAcceptedMessage(this.#locale) });
    await this.#save();
    const text = this.#checkpoint.messages.findLast((message) => message.role === 'assistant')?.content ?? '';
    const result = parsed.args;
    return { status: 'completed', output: text.trim() === '' ? JSON.stringify(result) : text, result };
  }

  /**
   * The run ends at `last`, a call of this turn: it gets its result, and each other call of the turn
   * still without one gets a result saying it did not run (a client call the turn set aside
   * included), in call order, so every call keeps exactly one result.
   */
  #leaveTurn(last: ToolCall, result: { ok: boolean; content: string }): void {
    for (const call of unansweredToolCalls(this.#checkpoint)) {
      if (call.id === last.id) {
        this.#record(call, result);
        continue;
      }
      this.#announce(call);
      this.#record(call, { ok: false, content: resultNotRunMessage(this.#locale, call.name) });
    }
  }

  /**
   * Counts a failed attempt at the result (kept in the checkpoint, so a resumed run goes on
   * counting): the `maxAttempts`-th fails the run with `ERR_OUTPUT_INVALID`, naming `why`.
   */
  #failedAttempt(output: { maxAttempts: number }, why: string): AttemptOutcome | undefined {
    const attempts = (this.#checkpoint.outputAttempts ?? 0) + 1;
    this.#checkpoint.outputAttempts = attempts;
    if (attempts < output.maxAttempts) return undefined;
    const error = new AgentError(
      'ERR_OUTPUT_INVALID',
      `The run gave no valid result in ${attempts} attempt${attempts === 1 ? '' : 's'} (output.maxAttempts). The last: ${why}`,
    );
    return { status: 'failed', error };
  }

  /**
   * A final answer in plain text in a run with `output`: a failed attempt. The model is told, as
   * the user, that the run ends only through `submit_result`, and the loop goes on.
   */
  async #answeredInText(output: { maxAttempts: number }): Promise<AttemptOutcome | undefined> {
    const failed = this.#failedAttempt(
      output,
      `the model answered in plain text without calling ${SUBMIT_RESULT_TOOL}.`,
    );
    if (!failed) {
      const content = resultRequiredMessage(this.#locale, SUBMIT_RESULT_TOOL);
      this.#checkpoint.messages.push({ role: 'user', content, reminder: true });
    }
    await this.#save();
    return failed;
  }

  /** A valid clarify call: answered in process, suspended on, or (`return`) its own result ending the run. */
  async #clarify(
    tool: Tool,
    call: ToolCall,
    question: { question: string; choices: string[] },
  ): Promise<AttemptOutcome | undefined> {
    if (this.#params.onClarifyRequest)
      return this.#askInProcess(this.#params.onClarifyRequest, call, question);
    if ((this.#params.interaction ?? 'suspend') === 'suspend') {
      const pending: PendingClarifyState = {
        requestId: newId('clr'),
        callId: call.id,
        question: question.question,
        choices: question.choices,
        expiresAt: new Date(this.#now() + this.#clarifyTimeoutMs).toISOString(),
      };
      this.#announce(call);
      this.#checkpoint.waitpoint = { requests: [{ kind: 'question', ...pending }] };
      await this.#save();
      // The host stores the question and appends `clarify.requested` in one step.
      return { status: 'suspended', clarify: pending };
    }
    // `return`: no channel to a human; clarify's own result ends the run with the question.
    const result = await runTool(this.#params, tool, call);
    if (this.#params.signal.aborted && this.#params.interrupted?.()) return { status: 'cancelled' };
    this.#record(call, result);
    await this.#save();
    return { status: 'completed', output: result.content };
  }

  async #askInProcess(
    handler: ClarifyRequestHandler,
    call: ToolCall,
    question: { question: string; choices: string[] },
  ): Promise<AttemptOutcome | undefined> {
    this.#announce(call);
    const asked = this.#now();
    const reply = await askInProcess(handler, question.question, question.choices, {
      signal: this.#params.signal,
      timeoutMs: this.#clarifyTimeoutMs,
    });
    this.#waitedMs += this.#now() - asked;
    if (reply.kind === 'aborted') {
      // As for any tool stopped mid-call: unanswered for the next owner, or Cancelled for the user.
      if (this.#params.interrupted?.()) return { status: 'cancelled' };
      const content = 'The clarify call was cancelled before the question was answered.';
      this.#record(call, { ok: false, content });
      await this.#save();
      return { status: 'cancelled' };
    }
    const result =
      reply.kind === 'answered'
        ? { ok: true, content: reply.answer }
        : reply.kind === 'timed-out'
          ? { ok: true, content: clarifyTimeoutMessage(this.#locale) }
          : { ok: false, content: clarifyFailedMessage(this.#locale, reply.reason) };
    this.#record(call, result);
    await this.#save();
    return undefined;
  }

  /** A call of one of `tools` (or of none: the model is told what it can call). */
  async #runToolCall(tool: Tool | undefined, call: ToolCall): Promise<AttemptOutcome | undefined> {
    const result = tool
      ? await runTool(this.#params, tool, call)
      : {
          ok: false,
          content: `There is no tool named "${call.name}". The tools you can call are: ${[...this.#tools.keys()].join(', ') || 'none'}.`,
        };
    // Stopped by the host while the call ran: its result is not the call's; the next owner runs it again.
    if (this.#params.signal.aborted && this.#params.interrupted?.()) return { status: 'cancelled' };
    if (!tool) this.#announce(call);
    this.#record(call, result, tool?.server);
    await this.#save();
    return undefined;
  }

  /** The turn's valid client tool calls, requested together: the attempt ends waiting for their outputs. */
  async #requestClientCalls(clientCalls: ClientCall[]): Promise<AttemptOutcome> {
    const expiresAt = new Date(
      this.#now() + (this.#params.toolTimeoutMs ?? CLIENT_TOOL_LIMITS.timeoutDefaultMs),
    ).toISOString();
    const calls: PendingToolCall[] = clientCalls.map(({ call, args }) => ({
      requestId: newId('tcr'),
      callId: call.id,
      name: call.name,
      arguments: args,
      expiresAt,
    }));
    for (const { call } of clientCalls) this.#announce(call);
    this.#checkpoint.waitpoint = { requests: calls.map((call) => ({ kind: 'tool_output', ...call })) };
    await this.#save();
    // The host records the requests and appends `tool.requested` for each in one step.
    return { status: 'tool_calls', calls };
  }

  /** The run's limits, checked before each model turn: a failure when one is reached. */
  limitReached(): AttemptOutcome | undefined {
    const checkpoint = this.#checkpoint;
    const limits = this.#limits;
    if (checkpoint.step >= limits.maxSteps) {
      return failure(
        'ERR_AGENT_MAX_STEPS',
        `The run took ${checkpoint.step} model turns (the limit) without a final answer.`,
      );
    }
    if (checkpoint.usage.outputTokens >= limits.maxOutputTokens) {
      return failure(
        'ERR_AGENT_MAX_OUTPUT_TOKENS',
        `The run used ${checkpoint.usage.outputTokens} output tokens (limit ${limits.maxOutputTokens}) without a final answer.`,
      );
    }
    if (limits.maxTotalTokens !== undefined && checkpoint.usage.totalTokens >= limits.maxTotalTokens) {
      return budgetExceeded(
        'limits.maxTotalTokens',
        `The run used ${checkpoint.usage.totalTokens} tokens (limit ${limits.maxTotalTokens}) without a final answer.`,
      );
    }
    const cost = checkpoint.usage.costUsd;
    if (limits.maxCostUsd !== undefined && cost !== undefined && cost >= limits.maxCostUsd) {
      return budgetExceeded(
        'limits.maxCostUsd',
        `The run spent $${cost.toFixed(4)} (limit $${limits.maxCostUsd}) without a final answer.`,
      );
    }
    if (checkpoint.activeMs >= limits.wallClockMs) {
      return failure(
        'ERR_AGENT_WALL_CLOCK',
        `The run was active for ${Math.round(checkpoint.activeMs / 1000)} s (limit ${Math.round(limits.wallClockMs / 1000)} s) without a final answer.`,
      );
    }
    return undefined;
  }

  /** The messages sent to the run since it last looked, put in the transcript as the user's, and saved. */
  async #takeMessages(): Promise<void> {
    const messages = (await this.#params.messages?.take()) ?? [];
    if (messages.length === 0) return;
    for (const { messageId, content } of messages) {
      this.#checkpoint.messages.push({ role: 'user', content, steered: true });
      this.#params.emit({ type: 'message.delivered', data: { messageId } });
    }
    await this.#save();
  }

  /** The tokens past which the request is compacted, when the window is known. */
  #threshold(): number | undefined {
    if (this.#window === undefined) return undefined;
    return Math.floor(this.#window * (this.#params.context?.compactAt ?? DEFAULT_COMPACT_AT));
  }

  /**
   * The request brought within the model's context before a turn: compacted past the threshold
   * (saved, and told in `context.compacted`), or the run failed when it cannot fit.
   */
  async #fitContext(): Promise<void> {
    const context = this.#params.context;
    const threshold = this.#threshold();
    if (!context || threshold === undefined) return;
    const tokens = this.#counter.count(this.#checkpoint.messages, this.#modelTools);
    if (tokens <= threshold) return;
    if (context.compaction) await this.#compact(threshold);
    const after = this.#counter.count(this.#checkpoint.messages, this.#modelTools);
    const window = this.#window as number;
    if (after > window) throw contextExhausted(after, window, context.compaction);
  }

  /** The transcript compacted under `threshold` tokens (see compaction.ts), saved, and told. */
  async #compact(threshold: number): Promise<void> {
    const { provider, signal, emit } = this.#params;
    const checkpoint = this.#checkpoint;
    const inputIndex = 1 + (checkpoint.history ?? 0);
    const compacted = await compactTranscript({
      messages: checkpoint.messages,
      inputIndex,
      tools: this.#modelTools,
      counter: this.#counter,
      threshold,
      target: Math.floor(threshold * COMPACT_TARGET),
      provider,
      signal,
      todos: checkpoint.todos,
      archive: this.#params.context?.archive,
      onAnswer: (turn) => {
        addUsage(checkpoint.usage, turn.usage, turn.profile === undefined ? provider.prices : turn.prices);
        emit({ type: 'usage', data: { ...checkpoint.usage } });
      },
    });
    if (!compacted) return;
    // A session's earlier turns that changed are stored with the run from now on, no longer
    // built again from the session's transcript.
    const before = checkpoint.messages;
    if (compacted.inputIndex !== inputIndex) {
      checkpoint.history = undefined;
      checkpoint.historyRef = undefined;
    } else if (before.slice(1, inputIndex).some((message, i) => compacted.messages[i + 1] !== message)) {
      checkpoint.historyRef = undefined;
    }
    checkpoint.messages = compacted.messages;
    const { pruned, ...report } = compacted.report;
    emit({
      type: 'context.compacted',
      data: { ...report, prunedToolResults: pruned, window: this.#window as number },
    });
    await this.#save();
  }

  /**
   * The model's answer to the transcript. A refusal of the request as too long (a window not
   * known, or larger than the model's) teaches the window: compacted once more and asked again
   * when compaction is on; else the run fails with `ERR_CONTEXT_EXHAUSTED`.
   */
  async #complete(signal: AbortSignal): Promise<ModelResponse> {
    const { emit, provider } = this.#params;
    const ask = () =>
      provider.complete({
        messages: this.#checkpoint.messages,
        tools: this.#modelTools,
        maxOutputTokens: undefined,
        signal,
        onDelta: (text) => emit({ type: 'message.delta', data: { text } }),
        onFallback: (moved) => emit({ type: 'model.fallback', data: moved }),
      });
    const context = this.#params.context;
    // Counted for the scale of the next counts only while the window is known: a run with none
    // (a replay script, an unknown model) never tokenizes its transcript until a refusal says to.
    const counted =
      this.#window === undefined ? 0 : this.#counter.raw(this.#checkpoint.messages, this.#modelTools);
    let turn: ModelResponse;
    try {
      turn = await ask();
    } catch (error) {
      if (!context || !isContextOverflow(error)) throw error;
      const tokens = this.#counter.count(this.#checkpoint.messages, this.#modelTools);
      const learnt = Math.floor(tokens * 0.9);
      this.#window = this.#window === undefined ? learnt : Math.min(this.#window, learnt);
      if (!context.compaction) throw contextExhausted(tokens, undefined, false, error);
      await this.#compact(this.#threshold() as number);
      try {
        turn = await ask();
      } catch (again) {
        if (!isContextOverflow(again)) throw again;
        const after = this.#counter.count(this.#checkpoint.messages, this.#modelTools);
        throw contextExhausted(after, undefined, true, again);
      }
      return turn;
    }
    this.#counter.calibrate(counted, turn.usage.inputTokens);
    // A server that lists the model's window says it with the first answer.
    if (this.#window === undefined && turn.contextWindow !== undefined) this.#window = turn.contextWindow;
    return turn;
  }

  /** One model turn: its answer appended; the outcome when it is the final answer (or the wall clock ran out). */
  async modelTurn(): Promise<AttemptOutcome | undefined> {
    await this.#takeMessages();
    const { emit, signal, provider } = this.#params;
    const checkpoint = this.#checkpoint;
    await this.#fitContext();
    const turn = await withWallClock(
      (turnSignal) => this.#complete(turnSignal),
      signal,
      this.#limits.wallClockMs - checkpoint.activeMs,
    );
    if (turn === 'wall-clock') {
      this.#tick();
      return failure(
        'ERR_AGENT_WALL_CLOCK',
        `The run reached its wall-clock limit of ${Math.round(this.#limits.wallClockMs / 1000)} s.`,
      );
    }
    checkpoint.step++;
    // A fallback's answer is priced, and recorded, as its own profile's.
    const answered = turn.profile ?? provider.name;
    addUsage(checkpoint.usage, turn.usage, turn.profile === undefined ? provider.prices : turn.prices);
    // The decisions were the last turn's calls'.
    checkpoint.decisions = undefined;
    checkpoint.model = { profile: answered, name: turn.model ?? provider.model ?? answered };
    checkpoint.messages.push({
      role: 'assistant',
      content: turn.content,
      ...(turn.toolCalls.length > 0 ? { toolCalls: turn.toolCalls } : {}),
    });
    emit({ type: 'usage', data: { ...checkpoint.usage } });
    emit({ type: 'message', data: { role: 'assistant', content: turn.content, toolCalls: turn.toolCalls } });
    if (turn.toolCalls.length === 0) {
      // A run with `output` ends only through submit_result: text alone is a failed attempt.
      if (this.#params.output) return this.#answeredInText(this.#params.output);
      // The final answer is not saved here: the caller stores the checkpoint with the
      // outcome, in the step that ends the run.
      this.#tick();
      return { status: 'completed', output: turn.content };
    }
    await this.#save();
    return undefined;
  }
}

function failure(
  code: 'ERR_AGENT_MAX_STEPS' | 'ERR_AGENT_MAX_OUTPUT_TOKENS' | 'ERR_AGENT_WALL_CLOCK',
  message: string,
): AttemptOutcome {
  return { status: 'failed', error: new AgentError(code, message) };
}

async function runTool(params: AttemptParams, tool: Tool, call: ToolCall) {
  params.emit({
    type: 'tool.call',
    data: {
      callId: call.id,
      name: call.name,
      arguments: call.arguments,
      ...(tool.server === undefined ? {} : { server: tool.server }),
    },
  });
  const ended = params.onToolCall?.(tool.name, tool.server);
  const result = await executeTool(tool, call.arguments, { callId: call.id, signal: params.signal });
  ended?.(result);
  return result;
}

/**
 * Appends a tool result to the transcript (cut to the limit, saying so, unless
 * `whole`: a result already fitted to it that a cut would break) and emits
 * `tool.result` (naming the tool's MCP server, when it has one).
 */
function recordToolResult(
  params: AttemptParams,
  checkpoint: Checkpoint,
  callId: string,
  name: string,
  result: { ok: boolean; content: string },
  limits: AttemptLimits,
  options: { whole?: boolean; server?: string | undefined } = {},
) {
  const content = options.whole ? result.content : truncateMiddle(result.content, limits.maxToolResultChars);
  checkpoint.messages.push({ role: 'tool', toolCallId: callId, content });
  const server = options.server === undefined ? {} : { server: options.server };
  params.emit({ type: 'tool.result', data: { callId, name, ok: result.ok, content, ...server } });
}

/** Keeps the head and the tail of a long text, with a note of how much was cut. */
export function truncateMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const keep = Math.max(0, max - 100);
  const head = text.slice(0, Math.ceil(keep * 0.6));
  const tail = text.slice(text.length - Math.floor(keep * 0.4));
  const cut = text.length - head.length - tail.length;
  return `${head}\n[... ${cut} characters cut from this tool result to keep the conversation within budget ...]\n${tail}`;
}

/**
 * A delegate call's tasks checked against the tool's schema and the host's
 * limits, each given its child run id, or the result that refuses the call
 * (nothing is started then, and a list is never cut short).
 */
function planDelegation(
  crew: CrewOptions,
  tool: Tool,
  call: ToolCall,
): { delegation: PendingDelegation } | { refused: ToolResult } {
  const parsed = parseToolArguments(tool.schema, call.arguments);
  if (!parsed.ok) return { refused: parsed.result };
  const tasks =
    call.name === 'delegate_parallel'
      ? (parsed.args as { tasks: CrewTask[] }).tasks
      : [parsed.args as CrewTask];
  const refuse = (content: string) => ({ refused: { ok: false, content } });
  if (tasks.length > crew.maxParallel) {
    return refuse(
      `${call.name} was given ${tasks.length} tasks, but one delegation holds at most ${crew.maxParallel}. Nothing was started. Split the tasks into batches of at most ${crew.maxParallel} and delegate one batch after another; each call returns when its batch is done.`,
    );
  }
  if (tasks.length > crew.remainingChildren) {
    return refuse(
      crew.remainingChildren <= 0
        ? `This run has started as many sub-agents as one run may over its life, so ${call.name} cannot start another. Nothing was started. Do the rest of the work yourself.`
        : `This run may start only ${crew.remainingChildren} more sub-agent${crew.remainingChildren === 1 ? '' : 's'} over its life (the limit on the children of one run), and this call asks for ${tasks.length}. Nothing was started. Delegate at most ${crew.remainingChildren} task${crew.remainingChildren === 1 ? '' : 's'}, and do the rest yourself.`,
    );
  }
  const refusal = crew.refuse?.(tasks);
  if (refusal !== undefined) return refuse(refusal);
  return {
    delegation: {
      callId: call.id,
      name: call.name === 'delegate_parallel' ? 'delegate_parallel' : 'delegate_task',
      tasks: tasks.map((task) => ({
        goal: task.goal,
        ...(task.context === undefined ? {} : { context: task.context }),
        ...(task.toolsets === undefined ? {} : { toolsets: [...task.toolsets] }),
        childRunId: crew.newChildId(),
      })),
    },
  };
}

/**
 * The one resume path: each request of the waitpoint the run waited on gets
 * its call's result from its resolution, in the requests' order (the
 * waitpoint's requests are one turn's, in call order). Every request must have
 * exactly one resolution of its kind: anything else is the host's mistake,
 * never passed on to the model (`ERR_AGENT_INTERNAL`).
 */
function resumeWaitpoint(
  params: AttemptParams,
  waitpoint: Waitpoint,
  limits: AttemptLimits,
  locale: Locale,
): void {
  const { checkpoint } = params;
  const byId = new Map((params.resolutions ?? []).map((resolution) => [resolution.requestId, resolution]));
  const missing = waitpoint.requests.filter((request) => !byId.has(request.requestId));
  if (missing.length > 0) {
    throw new AgentError(
      'ERR_AGENT_INTERNAL',
      `The run is waiting on ${missing.map(describeRequest).join(', ')}, but the attempt was resumed without ${missing.length === 1 ? 'its resolution' : 'their resolutions'}.`,
    );
  }
  for (const request of waitpoint.requests) {
    const resolution = byId.get(request.requestId) as WaitResolution;
    const timedOut = 'timedOut' in resolution;
    switch (request.kind) {
      case 'question': {
        if (!timedOut && !('answer' in resolution)) throw wrongResolution(request);
        const content = timedOut ? clarifyTimeoutMessage(locale) : resolution.answer;
        recordToolResult(params, checkpoint, request.callId, CLARIFY, { ok: true, content }, limits);
        break;
      }
      case 'tool_output': {
        if (!timedOut && !('output' in resolution)) throw wrongResolution(request);
        const result = timedOut
          ? { ok: false, content: toolTimeoutMessage(locale, request.name) }
          : { ok: !resolution.isError, content: resolution.output };
        recordToolResult(params, checkpoint, request.callId, request.name, result, limits);
        break;
      }
      case 'approval': {
        // Taken when the turn's calls reach the call (see `#decided`), so results stay in call order.
        if (!timedOut && !('decision' in resolution)) throw wrongResolution(request);
        const decision = timedOut
          ? { decision: request.onTimeout, by: 'timeout', timedOut: true }
          : resolution.decision;
        checkpoint.decisions = { ...checkpoint.decisions, [request.callId]: decision };
        break;
      }
      case 'children': {
        // A delegation's children always end (their own deadline fails them): there is no timeout of its own.
        if (!('results' in resolution)) throw wrongResolution(request);
        const content = crewResultContent(
          delegationResults(request, resolution.results),
          limits.maxToolResultChars,
        );
        recordToolResult(params, checkpoint, request.callId, request.name, { ok: true, content }, limits, {
          whole: true,
        });
        break;
      }
    }
  }
}

function describeRequest(request: WaitRequest): string {
  switch (request.kind) {
    case 'question':
      return `clarify request ${request.requestId}`;
    case 'tool_output':
      return `client tool call ${request.requestId}`;
    case 'children':
      return `the children of ${request.name} call ${request.callId}`;
    case 'approval':
      return `approval request ${request.requestId}`;
  }
}

function wrongResolution(request: WaitRequest): AgentError {
  return new AgentError(
    'ERR_AGENT_INTERNAL',
    `The attempt was resumed with a resolution that does not fit ${describeRequest(request)}.`,
  );
}

/**
 * The results of a delegation in task order, one per child: a result for a
 * child the delegation does not have, or a child without exactly one result,
 * is the host's mistake, never passed on to the model.
 */
function delegationResults(
  pending: PendingDelegation,
  results: readonly CrewResultEntry[],
): CrewResultEntry[] {
  const byRun = new Map<string, CrewResultEntry[]>();
  for (const entry of results) byRun.set(entry.runId, [...(byRun.get(entry.runId) ?? []), entry]);
  const children = new Set(pending.tasks.map((task) => task.childRunId));
  const wrong = [
    ...pending.tasks
      .filter((task) => byRun.get(task.childRunId)?.length !== 1)
      .map((task) => task.childRunId),
    ...[...byRun.keys()].filter((runId) => !children.has(runId)),
  ];
  if (wrong.length > 0) {
    throw new AgentError(
      'ERR_AGENT_INTERNAL',
      `The results of ${pending.name} call ${pending.callId} must hold one entry per child run; these have none, several, or belong to no task: ${wrong.join(', ')}.`,
    );
  }
  return [...results].sort((a, b) => a.index - b.index);
}

/**
 * The delegation's tool result: the entries as JSON, in order. When the JSON
 * is longer than `max` characters, the summaries are shortened evenly: every
 * summary longer than one cap is cut to it (keeping its head and tail, with a
 * note of the cut), the cap being the largest that fits, so the result stays
 * valid JSON where a cut in the middle of the text would break it. Entries
 * whose other fields alone pass `max` are left longer than it.
 */
export function crewResultContent(entries: readonly CrewResultEntry[], max: number): string {
  const render = (cap: number) =>
    JSON.stringify(
      entries.map(({ index, runId, status, summary, usage, durationMs }) => ({
        index,
        runId,
        status,
        summary: shortenSummary(summary, cap),
        usage,
        durationMs,
      })),
    );
  const longest = Math.max(0, ...entries.map((entry) => entry.summary.length));
  const whole = render(longest);
  if (whole.length <= max) return whole;
  // The largest cap that fits (escapes make a summary's length in JSON its own): a binary search.
  let fits = 0;
  let over = longest;
  while (fits + 1 < over) {
    const cap = Math.floor((fits + over) / 2);
    if (render(cap).length <= max) fits = cap;
    else over = cap;
  }
  return render(fits);
}

/** A summary cut to about `cap` characters: its head and tail, and a note of how much was cut. */
function shortenSummary(summary: string, cap: number): string {
  if (summary.length <= cap) return summary;
  const note = (cut: number) => `\n[... ${cut} characters of this summary cut to fit the result ...]\n`;
  const keep = Math.max(0, cap - note(summary.length).length);
  const head = summary.slice(0, Math.ceil(keep * 0.6));
  const tail = summary.slice(summary.length - Math.floor(keep * 0.4));
  return `${head}${note(summary.length - head.length - tail.length)}${tail}`;
}

/** A decision taken in process: the handler's when it is one, the policy's at the deadline, else a refusal saying why. */
function inProcessDecision(
  reply: InProcessOutcome,
  onTimeout: 'approve' | 'reject',
): ApprovalDecision & { timedOut?: boolean } {
  if (reply.kind === 'timed-out') return { decision: onTimeout, by: 'timeout', timedOut: true };
  if (reply.kind === 'settled' && Value.Check(ApprovalDecisionBodySchema, reply.value)) {
    return { ...(reply.value as ApprovalDecisionBody), by: 'in_process' };
  }
  const why = reply.kind === 'failed' ? reply.reason : 'it gave no decision';
  return { decision: 'reject', message: `The approval handler failed: ${why}.`, by: 'in_process' };
}

/** Decides in process on a tool call held for approval (see {@link AttemptParams.onApprovalRequest}). */
export type ApprovalRequestHandler = (
  request: PendingApproval,
  context: { signal: AbortSignal },
) => Promise<ApprovalDecisionBody> | ApprovalDecisionBody;

/** A call's arguments as shown to a reviewer: the parsed JSON, or the text when it is not JSON. */
function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch {
    return text;
  }
}

/** The question and choices of a clarify call, or undefined when its arguments are invalid (the tool then explains). */
function clarifyQuestion(tool: Tool, call: ToolCall): { question: string; choices: string[] } | undefined {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    return undefined;
  }
  if (!Value.Check(tool.schema.parameters, args)) return undefined;
  const { question, choices } = args as { question: string; choices?: string[] };
  return { question, choices: choices ?? [] };
}

function addUsage(total: Usage, turn: Usage, prices: ModelPrices | undefined) {
  // What the turn cost, once the provider's prices are known (a run's earlier turns on a
  // provider without them counted nothing).
  if (prices) total.costUsd = (total.costUsd ?? 0) + turnCost(turn, prices);
  total.inputTokens += turn.inputTokens;
  total.outputTokens += turn.outputTokens;
  total.totalTokens += turn.totalTokens;
  // The cache figures appear once a turn reports them.
  for (const key of ['cacheReadTokens', 'cacheWriteTokens'] as const) {
    const tokens = turn[key];
    if (tokens !== undefined) total[key] = (total[key] ?? 0) + tokens;
  }
}

/**
 * What a turn's tokens cost, in US dollars: input read from the prompt cache at `cachedInput`
 * (else `input`), the rest of the input at `input` (cache writes included), output at `output`,
 * each per million tokens.
 */
export function turnCost(usage: Usage, prices: ModelPrices): number {
  const cached = Math.min(usage.cacheReadTokens ?? 0, usage.inputTokens);
  const perMillion =
    (usage.inputTokens - cached) * prices.input +
    cached * (prices.cachedInput ?? prices.input) +
    usage.outputTokens * prices.output;
  return perMillion / 1_000_000;
}

/** The request cannot be brought within the model's context: the run fails, saying so. */
function contextExhausted(
  tokens: number,
  window: number | undefined,
  compaction: boolean,
  cause?: unknown,
): AgentError {
  const size =
    window === undefined ? "the model's context window" : `the model's context window (${window} tokens)`;
  const why = compaction
    ? 'even after compaction (the system prompt, the input and the last turns are never compacted)'
    : 'and the run has compaction off';
  return new AgentError(
    'ERR_CONTEXT_EXHAUSTED',
    `The run's next request takes about ${tokens} tokens, more than ${size}, ${why}.`,
    cause === undefined ? {} : { cause },
  );
}

/** A budget of `limits` reached: the run fails, naming it. */
function budgetExceeded(limit: string, message: string): AttemptOutcome {
  return { status: 'failed', error: new AgentError('ERR_BUDGET_EXCEEDED', `${message} (${limit})`) };
}

/** Runs a model turn that is aborted when the run's remaining active time runs out. */
async function withWallClock<T>(
  run: (signal: AbortSignal) => Promise<T>,
  signal: AbortSignal,
  remainingMs: number,
): Promise<T | 'wall-clock'> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  let expired = false;
  const timer = setTimeout(
    () => {
      expired = true;
      controller.abort(new Error('wall clock'));
    },
    Math.max(0, remainingMs),
  );
  try {
    return await run(controller.signal);
  } catch (error) {
    if (expired && !signal.aborted) return 'wall-clock';
    throw error;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}
