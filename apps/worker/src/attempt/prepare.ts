import {
  approvalsOf,
  type Checkpoint,
  childrenOf,
  composeSystemPrompt,
  type HistoryWindow,
  historyMessages,
  initialCheckpoint,
  questionOf,
  readCheckpoint,
  restoreHistory,
  sharedPromptRef,
  type TranscriptEntry,
  toolOutputsOf,
  unansweredToolCalls,
  type WaitResolution,
} from '@tether/agent';
import type { ErrorBody, Locale, RunEventInput } from '@tether/protocol';
import {
  decisionOf,
  type RequestOutcome,
  type RunSpec,
  type RunStore,
  toolCallOutcome,
} from '@tether/store/runs';
import {
  BUILTIN_TOOL_NAMES,
  getAllToolNames,
  isToolError,
  killRunLeftovers,
  sandboxUserFor,
  TOOLSET_DEFAULTS,
  Workspace,
  workspaceDir,
} from '@tether/tools';
import { type RunSkills, runSkills } from '../skills.js';
import type { Claimed } from './claim.js';
import { type AttemptContext, isSettlement, type Settlement } from './context.js';
import { crewLimits, planChildren, resolveDelegation, withCrewTools } from './crew.js';
import { memoryPrompt, memoryScopeFor } from './memory.js';

/** Everything the attempt loop needs, ready. */
export interface Prepared {
  tenant: string;
  spec: RunSpec;
  /** The run's workspace directory (made when something needs it). */
  workspace: string;
  locale: Locale;
  toolNames: string[];
  checkpoint: Checkpoint;
  /**
   * How each request of the waitpoint the run resumes from was resolved, if it
   * waited (`checkpoint.waitpoint`): a question's answer or timeout, each client
   * tool call's output or timeout, the children's results.
   */
  resolutions: WaitResolution[] | undefined;
  /** What the run may delegate, if it has the crew's delegate tools. */
  crew: Awaited<ReturnType<typeof crewLimits>>;
  /** The session the run belongs to, if any. */
  sessionId: string | undefined;
  /** The memory scope the run reads and writes, when it has the memory toolset. */
  memoryScope: string | undefined;
  /** Events of the preparation (`session.truncated`), written with the attempt's first ones. */
  events: RunEventInput[];
  /** The tenant's skills, when the run has the skill tools. */
  skills: RunSkills | undefined;
  /** How many messages sent to the run waited to be taken when it was claimed. */
  inbox: number;
}

/**
 * Prepare: the submitted files are written into the workspace (the first
 * time; a session's, before its first run), the checkpoint is loaded (or a
 * new one made, with a session's transcript as its history), the question the run
 * waited on is resolved (answered, or timed out once past its deadline; still
 * pending means it was woken early and goes back to sleep), and whatever an
 * earlier owner's commands left on this host is killed before a call in flight
 * runs again.
 */
export async function prepareAttempt(ctx: AttemptContext, claimed: Claimed): Promise<Prepared | Settlement> {
  const { config, store, runId, log } = ctx;
  const { spec, sessionId, tenant } = claimed;
  // The workspace is made when something needs it: the submitted files here, or the
  // tools on first use. A run that never touches files costs no directory. A crew child
  // works in its tree's (its root run's, or the root's session's).
  const workspace = workspaceDir(config.workspaceRoot, spec.crew?.workspace ?? { id: runId, sessionId });
  const sandboxUser = sandboxUserFor(config.sandboxUser);
  const write = async (files: Record<string, string>) =>
    writeSubmittedFiles(new Workspace(workspace, sandboxUser ? { owner: sandboxUser } : {}), files);
  // A session's files go in before its first run's (which may then overwrite them).
  const sessionFiles = sessionId && !claimed.checkpoint ? await store.sessionFiles(sessionId) : undefined;
  if (sessionId && sessionFiles) {
    const problem = await write(sessionFiles);
    if (problem) return { kind: 'failed', error: problem, retryable: false };
    await store.dropSessionFiles(sessionId);
  }
  if (spec.files) {
    const problem = await write(spec.files);
    if (problem) return { kind: 'failed', error: problem, retryable: false };
    await store.dropFiles(runId, spec);
  }

  const locale = spec.locale ?? 'en';
  const toolNames = withCrewTools(toolNamesFor(spec), spec, config.crewMaxDepth);
  // The tenant's skills: the prompt's index at the start, their folder for bash at every attempt.
  const skills =
    ctx.skills && toolNames.includes('read_skill') ? await runSkills(ctx.skills, tenant, config) : undefined;
  const events: RunEventInput[] = [];
  const memoryScope = memoryScopeFor(ctx, spec, sessionId, toolNames);
  const checkpoint = claimed.checkpoint
    ? await storedCheckpointOf(ctx, claimed.checkpoint, sessionId, { toolNames, locale })
    : await newCheckpoint(ctx, claimed, { toolNames, locale, workspace, skills, memoryScope, events });

  const resolved = await resolveWaitpoint(ctx, claimed, checkpoint);
  if (resolved && !Array.isArray(resolved)) return resolved;
  const resolutions = resolved;
  const waitpoint = checkpoint.waitpoint;

  // A call in flight when the previous owner died or lost the run: on this host, whatever is left
  // of it is killed first, so the call never has two live executions. (On another host, its
  // watchdog or its lost lock has killed it before this worker could take the run over.)
  // The calls the run waits on (a question, its children, a client's outputs) never ran here.
  const waitedOn = new Set(waitpoint?.requests.map((request) => request.callId));
  const inFlight = unansweredToolCalls(checkpoint).filter((call) => !waitedOn.has(call.id));
  if (claimed.checkpoint && inFlight.length > 0) {
    const left = await killRunLeftovers(runId);
    if (left.cgroups + left.processes > 0) log.warn(left, "killed what an earlier owner's commands left");
  }
  const crew = await crewLimits(ctx, toolNames, spec);
  return {
    tenant,
    spec,
    workspace,
    locale,
    toolNames,
    checkpoint,
    resolutions,
    crew,
    sessionId,
    memoryScope,
    events,
    skills,
    inbox: claimed.inbox ?? 0,
  };
}

/** A session's transcript as a new run's history, windowed to `budget` tokens. */
export async function sessionHistory(
  store: RunStore,
  sessionId: string,
  budget: number,
  upTo?: number,
): Promise<HistoryWindow & { entries: number }> {
  const stored = await store.readTranscript(sessionId, upTo);
  const entries = stored.map((json) => JSON.parse(json) as TranscriptEntry);
  return { ...historyMessages(entries, budget), entries: entries.length };
}

/** The tool names of a run: its toolsets (default: base, planning, interaction), built-in tools only. */
export function toolNamesFor(spec: RunSpec): string[] {
  const builtins: readonly string[] = BUILTIN_TOOL_NAMES;
  return getAllToolNames(spec.toolsets ?? [...TOOLSET_DEFAULTS]).filter((name) => builtins.includes(name));
}

/**
 * Writes the submitted files into the workspace, with the confinement of the
 * file tools; returns the run's error, or undefined.
 */
export async function writeSubmittedFiles(
  workspace: Workspace,
  files: Record<string, string>,
): Promise<ErrorBody | undefined> {
  for (const [path, content] of Object.entries(files)) {
    let target: Awaited<ReturnType<Workspace['resolve']>>;
    try {
      target = await workspace.resolve(path);
    } catch (error) {
      const why = isToolError(error) ? ` ${error.message}` : '';
      return {
        code: 'ERR_WORKER_FILES',
        message: `The submitted file path ${JSON.stringify(path)} is not a relative path inside the workspace.${why}`,
      };
    }
    try {
      await workspace.writeFileAtomic(target, Buffer.from(content, 'utf8'));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return {
        code: 'ERR_WORKER_FILE_WRITE',
        message: `The submitted file ${JSON.stringify(path)} could not be written: ${why}`,
      };
    }
  }
  return undefined;
}

/**
 * A run woken while it waits: every request of its waitpoint resolved (or past its deadline), or
 * back to waiting. A question's and client tool calls' fates come from the waitpoint in Redis
 * (timed out there once past the deadline); a crew parent's children are looked after first (see
 * resolveDelegation). Requests the checkpoint has but Redis does not (the previous owner died
 * between the save and the step that opens the waitpoint) are opened again, as they were.
 * Undefined when the run waited on nothing.
 */
async function resolveWaitpoint(
  ctx: AttemptContext,
  claimed: Claimed,
  checkpoint: Checkpoint,
): Promise<WaitResolution[] | Settlement | undefined> {
  const { store, runId, fence } = ctx;
  const { spec, sessionId, tenant } = claimed;
  const waitpoint = checkpoint.waitpoint;
  const children = childrenOf(waitpoint);
  if (children) {
    const delegation = { callId: children.callId, name: children.name, tasks: children.tasks };
    const plan = (pending: typeof delegation) =>
      planChildren(ctx, { tenant, spec, sessionId }, pending, ctx.crew.queueOf);
    const resolved = await resolveDelegation(ctx, delegation, plan);
    if (isSettlement(resolved)) return resolved;
    return [{ requestId: children.requestId, results: resolved.results }];
  }

  const question = questionOf(waitpoint);
  const calls = toolOutputsOf(waitpoint).map(({ kind: _kind, ...call }) => call);
  const approvals = approvalsOf(waitpoint).map(({ kind: _kind, ...approval }) => approval);
  const ids = question ? [question.requestId] : [...calls, ...approvals].map((request) => request.requestId);
  const [id] = ids;
  if (id === undefined) return undefined;
  const on = question ? 'question' : approvals.length > 0 ? 'approval' : 'tool_output';
  const state = await store.expireWaitpoint(runId, id, ids, fence, spec.crew?.rootRunId);
  switch (state.state) {
    case 'not_owner':
      return { kind: 'lost', why: 'another worker owns the run', handBack: true };
    case 'pending':
      return { kind: 'waiting', on, again: { untilMs: state.deadlineMs } };
    case 'missing': {
      if (approvals.length > 0) return { kind: 'waiting', on: 'approval', open: approvals };
      if (!question) return { kind: 'waiting', on: 'tool_output', open: calls };
      const { kind: _kind, callId: _callId, ...pending } = question;
      return { kind: 'waiting', on: 'question', open: pending };
    }
    case 'ready':
      if (question) ctx.observer?.clarifyResumed(question.requestId);
      return state.outcomes.map((outcome) => resolution(on, outcome));
  }
}

/** How one request of the waitpoint was resolved, from its outcome in Redis. */
function resolution(on: 'question' | 'approval' | 'tool_output', outcome: RequestOutcome): WaitResolution {
  const { requestId } = outcome;
  if (on === 'question') {
    return outcome.state === 'answered'
      ? { requestId, answer: outcome.result }
      : { requestId, timedOut: true };
  }
  if (on === 'tool_output') return toolCallOutcome(outcome);
  const decision = decisionOf(outcome);
  return decision ? { requestId, decision } : { requestId, timedOut: true };
}

/**
 * The checkpoint an earlier attempt stored, read back whole: a session run's history built again
 * from its reference, and the shared part of its system prompt from Redis (see
 * {@link currentSharedPrompt} for when it is gone).
 */
async function storedCheckpointOf(
  ctx: AttemptContext,
  json: string,
  sessionId: string | undefined,
  tools: { toolNames: readonly string[]; locale: Locale },
): Promise<Checkpoint> {
  let rebuilt = false;
  const checkpoint = await readCheckpoint(json, async (ref) => {
    const stored = await ctx.store.sharedPrompts.get(ref);
    if (stored !== undefined) return stored;
    rebuilt = true;
    return currentSharedPrompt(ctx, ref, tools);
  });
  if (rebuilt && checkpoint.shared) {
    // Kept again, under the hash of what the run now has, for the checkpoints to come.
    checkpoint.shared.ref = sharedPromptRef(checkpoint.shared.text);
    await ctx.store.sharedPrompts.keep(checkpoint.shared.ref, checkpoint.shared.text);
  }
  // A session run's stored checkpoint holds a reference to its history: built again, the same.
  const ref = checkpoint.historyRef;
  if (sessionId && ref) {
    const window = await sessionHistory(ctx.store, sessionId, ref.budget, ref.entries);
    restoreHistory(checkpoint, window.messages);
  }
  return checkpoint;
}

/**
 * The shared part of a run's system prompt when Redis no longer has it (no worker started a run
 * with it for 400 days, or the key was deleted): this release's for the run's tools and locale,
 * the same text unless a release since changed it (then the log says so). The run is not lost.
 */
function currentSharedPrompt(
  ctx: AttemptContext,
  ref: string,
  tools: { toolNames: readonly string[]; locale: Locale },
): string | undefined {
  const current = composeSystemPrompt({ toolNames: tools.toolNames, locale: tools.locale }).shared?.text;
  if (current !== undefined && sharedPromptRef(current) !== ref) {
    ctx.log.warn(
      { ref },
      "the shared part of the run's system prompt is gone from Redis: the run goes on with this release's for its tools",
    );
  }
  return current;
}

/**
 * A run's first checkpoint: its system prompt (its shared part kept in Redis before any checkpoint
 * names it), a session's transcript as its history (windowed to the budget), then its input.
 */
async function newCheckpoint(
  ctx: AttemptContext,
  claimed: Claimed,
  parts: {
    toolNames: readonly string[];
    locale: Locale;
    workspace: string;
    skills: RunSkills | undefined;
    memoryScope: string | undefined;
    events: RunEventInput[];
  },
): Promise<Checkpoint> {
  const { config, store } = ctx;
  const { spec, sessionId, tenant } = claimed;
  const budget = config.sessionHistoryTokens;
  const window = sessionId ? await sessionHistory(store, sessionId, budget) : undefined;
  if (window?.truncated) parts.events.push({ type: 'session.truncated', data: window.truncated });
  const prompt = composeSystemPrompt({
    toolNames: parts.toolNames,
    locale: parts.locale,
    workspace: parts.workspace,
    crew: spec.crew && { goal: spec.crew.goal, context: spec.crew.context },
    // Read once, at the run's start: the block stays in the checkpoint as it was.
    memory: parts.memoryScope === undefined ? undefined : await memoryPrompt(ctx, tenant, parts.memoryScope),
    skills: parts.skills && {
      entries: parts.skills.entries,
      maxChars: config.skillsPromptChars,
      mountPath: parts.skills.mountPath,
    },
  });
  const checkpoint = initialCheckpoint({
    systemPrompt: prompt.text,
    shared: prompt.shared,
    input: spec.input,
    history: window?.messages,
    historyRef: window ? { entries: window.entries, budget } : undefined,
  });
  if (checkpoint.shared) await store.sharedPrompts.keep(checkpoint.shared.ref, checkpoint.shared.text);
  return checkpoint;
}
