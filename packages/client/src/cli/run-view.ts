import type { RunEvent, Usage } from '@tether/protocol';
import { afterDeadline, approvalArgumentLines, deadlineLine } from './approval-format.js';
import { formatCountdown, formatDuration } from './duration.js';
import {
  colorChildStatus,
  firstLine,
  formatTodos,
  type Glyphs,
  glyphsFor,
  summariseArguments,
  truncate,
  waitingFor,
} from './format.js';
import type { Colors, Output } from './io.js';

/** Lines of a tool's streamed output shown per call before the rest is elided. */
const TOOL_OUTPUT_LINES = 12;

/** The crew tools whose call starts children (the names of the `crew` toolset in the tool catalog). */
const DELEGATING_TOOLS: ReadonlySet<string> = new Set(['delegate_task', 'delegate_parallel']);

/** A delegation whose children are being started: how many it asked for, and those started so far. */
interface Delegation {
  callId: string;
  /** Undefined when the call's arguments do not say (not JSON, no task list). */
  tasks: number | undefined;
  started: Set<string>;
}

export interface RunViewOptions {
  /** How to tell the user to answer when they cannot be prompted; omitted when they will be. */
  answerHint?: (requestId: string) => string;
  /** How to tell the user to decide on a tool call when they cannot be prompted; omitted when they will be. */
  decideHint?: (runId: string, requestId: string) => string;
  /**
   * A conversation's view (`tether chat`): no queued, started or resumed
   * lines, no step headers, no `clarify` tool lines (the question and its answer show),
   * and at the end only what the last message did not show.
   */
  compact?: boolean;
  now?: () => number;
}

/**
 * The human view of a run's events, written as they arrive: a header per model
 * step, streamed text as it streams, each tool call with a short result, the
 * todo list whenever it changes, questions and answers, tool calls waiting
 * for approval and the decisions taken, messages sent to the run and whether
 * it took them, a crew parent's
 * children as they start and finish (and how many it waits for), and the
 * outcome with the final output. Append-only, so it reads the same in a
 * terminal, a log file or a pipe.
 */
export class RunView {
  /** The usage last reported, for the closing summary. */
  usage: Usage | undefined;
  private readonly out: Output;
  private readonly c: Colors;
  private readonly options: RunViewOptions;
  private step = 0;
  private turnOpen = false;
  private streamedThisTurn = false;
  /** The cursor is not at the start of a line (streamed text without its newline yet). */
  private midLine = false;
  /** The last assistant message shown, which a compact view does not repeat as the output. */
  private lastMessage: string | undefined;
  private readonly toolOutput = new Map<string, { lines: number; partial: string }>();
  private readonly glyphs: Glyphs;
  /** The delegation last called, until its result: its children's lines end with how many the run waits for. */
  private delegation: Delegation | undefined;
  /** The tool of each approval request seen, so that its decision's line can name it. */
  private readonly approvalTools = new Map<string, string>();
  /** The content of each message sent to the run seen, so that the line saying it was taken can quote it. */
  private readonly messages = new Map<string, string>();

  constructor(out: Output, colors: Colors, options: RunViewOptions = {}) {
    this.out = out;
    this.c = colors;
    this.options = options;
    this.glyphs = glyphsFor(colors);
  }

  /**
   * Shows one event. `settled`, for a question, a client tool call or an
   * approval request read from the past that was settled later (answered,
   * decided, timed out, its run ended): it is shown without the time left or
   * how to answer.
   */
  render(event: RunEvent, options: { settled?: boolean } = {}): void {
    const settled = options.settled === true;
    switch (event.type) {
      case 'run.queued':
      case 'run.started':
      case 'attempt.started':
      case 'run.retrying':
      case 'session.truncated':
        this.showProgress(event);
        break;
      case 'message.delta':
      case 'message':
        this.showMessage(event);
        break;
      case 'tool.call':
      case 'tool.output':
      case 'tool.result':
        this.showTool(event);
        break;
      case 'todo.updated':
        this.line(this.c.bold('  Todo'));
        for (const todo of formatTodos(event.data.todos, this.c, '    ')) this.line(todo);
        break;
      case 'clarify.requested':
      case 'clarify.answered':
      case 'clarify.timed_out':
        this.showClarify(event, settled);
        break;
      case 'child.started':
      case 'child.finished':
        this.showChild(event);
        break;
      case 'tool.requested':
      case 'tool.output_received':
      case 'tool.timed_out':
        this.showClientTool(event, settled);
        break;
      case 'approval.requested':
      case 'approval.resolved':
        this.showApproval(event, settled);
        break;
      case 'message.received':
      case 'message.delivered':
      case 'message.undelivered':
        this.showSteering(event);
        break;
      case 'usage':
        this.usage = event.data;
        break;
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled':
        this.showOutcome(event);
        break;
      default:
        break;
    }
  }

  /** Where the run is: queued, started, resumed, retrying, its history shortened. */
  private showProgress(
    event: RunEvent<'run.queued' | 'run.started' | 'attempt.started' | 'run.retrying' | 'session.truncated'>,
  ): void {
    const c = this.c;
    switch (event.type) {
      case 'run.queued':
        if (!this.options.compact) this.line(c.dim('queued'));
        break;
      case 'run.started':
        if (!this.options.compact) {
          this.line(c.dim(`started: attempt ${event.data.attempt} on ${event.data.workerId}`));
        }
        break;
      case 'attempt.started':
        this.step = event.data.step;
        if (event.data.resumed && !this.options.compact)
          this.line(c.dim(`resumed at step ${event.data.step + 1}`));
        break;
      case 'run.retrying': {
        // `attempt` is the attempt to come (the worker's markRetrying): the one before it failed.
        const { attempt, delayMs, error } = event.data;
        this.line(
          c.yellow(
            `Attempt ${attempt - 1} failed (${error.code}: ${error.message}); ` +
              `attempt ${attempt} in ${formatDuration(delayMs)}`,
          ),
        );
        break;
      }
      case 'session.truncated':
        this.line(
          c.dim(
            `(the model sees the conversation without its ${event.data.droppedTurns} oldest turns` +
              ` and with ${event.data.shortenedToolResults} tool results shortened)`,
          ),
        );
        break;
    }
  }

  /** The model's text: streamed as it comes, or whole when it was not streamed. */
  private showMessage(event: RunEvent<'message.delta' | 'message'>): void {
    this.openTurn();
    if (event.type === 'message.delta') {
      this.streamedThisTurn = true;
      this.write(event.data.text);
      return;
    }
    if (!this.streamedThisTurn && event.data.content !== '') this.write(event.data.content);
    if (event.data.content !== '') this.lastMessage = event.data.content;
    this.endLine();
    this.turnOpen = false;
    this.streamedThisTurn = false;
    this.step++;
  }

  /** A tool call, its streamed output and its result (a delegation's calls start its children). */
  private showTool(event: RunEvent<'tool.call' | 'tool.output' | 'tool.result'>): void {
    const c = this.c;
    switch (event.type) {
      case 'tool.call':
        // A conversation shows the question and its answer once, as the prompt and `answered:`.
        if (this.options.compact && event.data.name === 'clarify') break;
        // The calls of a turn arrive after its `message`: they belong to that step.
        this.line(
          `  ${c.cyan('>')} ${c.bold(event.data.name)} ${c.dim(summariseArguments(event.data.arguments))}`,
        );
        if (DELEGATING_TOOLS.has(event.data.name)) {
          this.delegation = {
            callId: event.data.callId,
            tasks: delegatedTasks(event.data.name, event.data.arguments),
            started: new Set(),
          };
        }
        break;
      case 'tool.output':
        this.toolChunk(event.data.callId, event.data.chunk, event.data.stream);
        break;
      case 'tool.result': {
        if (event.data.callId === this.delegation?.callId) this.delegation = undefined;
        if (this.options.compact && event.data.name === 'clarify') break;
        this.flushToolOutput(event.data.callId);
        const { line, more } = firstLine(event.data.content, 100);
        const mark = event.data.ok ? c.green('ok') : c.red('error');
        const rest = more > 0 ? c.dim(` (+${more} lines)`) : '';
        this.line(`    ${mark} ${line === '' ? c.dim('(no output)') : line}${rest}`);
        break;
      }
    }
  }

  /** A question (with its choices and how to answer, unless settled), its answer or its timeout. */
  private showClarify(
    event: RunEvent<'clarify.requested' | 'clarify.answered' | 'clarify.timed_out'>,
    settled: boolean,
  ): void {
    const c = this.c;
    switch (event.type) {
      case 'clarify.requested': {
        const { question, choices, expiresAt, requestId } = event.data;
        const left = formatCountdown(Date.parse(expiresAt) - (this.options.now ?? Date.now)());
        this.line(
          `${c.magenta('?')} ${c.bold(question)}${settled ? '' : ` ${c.dim(`(${left} to answer)`)}`}`,
        );
        if (this.options.answerHint) {
          choices.forEach((choice, i) => {
            this.line(`    ${c.dim(`${i + 1}.`)} ${choice}`);
          });
          if (!settled) this.line(c.dim(`    ${this.options.answerHint(requestId)}`));
        }
        break;
      }
      case 'clarify.answered':
        this.line(`  ${c.magenta('answered:')} ${truncate(event.data.answer, 200)}`);
        break;
      case 'clarify.timed_out':
        this.line(c.yellow('  No answer in time: the agent decides on its own and goes on.'));
        break;
    }
  }

  /** A crew child started or finished; once a delegation's children have all started, what the parent waits for. */
  private showChild(event: RunEvent<'child.started' | 'child.finished'>): void {
    const c = this.c;
    if (event.type === 'child.finished') {
      const { childRunId, index, status, summary } = event.data;
      const { line, more } = firstLine(summary, 80);
      const rest = more > 0 ? c.dim(` (+${more} lines)`) : '';
      this.line(
        `    ${c.cyan(this.glyphs.child)} child ${index} ${colorChildStatus(status, c)}: ${line === '' ? c.dim('(no summary)') : line}${rest} ${c.dim(`(${childRunId})`)}`,
      );
      return;
    }
    const { childRunId, index, goal } = event.data;
    const { line } = firstLine(goal, 80);
    this.line(
      `    ${c.cyan(this.glyphs.child)} child ${index} started: ${line === '' ? c.dim('(no goal)') : line} ${c.dim(`(${childRunId})`)}`,
    );
    const delegation = this.delegation;
    if (delegation && !delegation.started.has(childRunId)) {
      delegation.started.add(childRunId);
      // The parent waits once all its delegation's children have started: no event says so.
      if (delegation.started.size === delegation.tasks)
        this.line(c.dim(`    ${waitingFor(delegation.tasks)}`));
    }
  }

  /** A client tool's request (and the time left, unless settled), its output arriving, or its timeout. */
  private showClientTool(
    event: RunEvent<'tool.requested' | 'tool.output_received' | 'tool.timed_out'>,
    settled: boolean,
  ): void {
    const c = this.c;
    switch (event.type) {
      case 'tool.requested': {
        const { name, requestId, expiresAt } = event.data;
        const left = formatCountdown(Date.parse(expiresAt) - (this.options.now ?? Date.now)());
        const waits = settled
          ? `waited for the client's output (request ${requestId})`
          : `waits for the client's output (request ${requestId}, ${left} left)`;
        this.line(`  ${c.magenta('…')} ${c.bold(name)} ${c.dim(waits)}`);
        break;
      }
      case 'tool.output_received':
        this.line(
          c.dim(
            `  client output received for ${event.data.requestId}${event.data.isError ? ' (an error)' : ''}`,
          ),
        );
        break;
      case 'tool.timed_out':
        this.line(
          c.yellow(`  No client output in time for ${event.data.requestId}: the agent goes on without it.`),
        );
        break;
    }
  }

  /**
   * A tool call that waits for a decision: its tool, why it asks, its arguments, and (unless
   * settled) the time left and how to decide; or the decision taken, by whom.
   */
  private showApproval(event: RunEvent<'approval.requested' | 'approval.resolved'>, settled: boolean): void {
    const c = this.c;
    if (event.type === 'approval.requested') {
      const { tool, reason, requestId } = event.data;
      this.approvalTools.set(requestId, tool);
      const waits = settled ? 'waited for approval' : 'waits for approval';
      this.line(`  ${c.magenta('!')} ${c.bold(tool)} ${waits} ${c.dim(`(${reason})`)}`);
      for (const line of approvalArgumentLines(tool, event.data.arguments)) this.line(`    ${line}`);
      if (settled) return;
      this.line(c.dim(`    ${deadlineLine(event.data, (this.options.now ?? Date.now)())}`));
      if (this.options.decideHint) this.line(c.dim(`    ${this.options.decideHint(event.runId, requestId)}`));
      return;
    }
    const { requestId, decision, by, message } = event.data;
    const tool = this.approvalTools.get(requestId) ?? `request ${requestId}`;
    if (event.data.timedOut) {
      const outcome = afterDeadline(decision === 'approve' ? 'approve' : 'reject');
      this.line(c.yellow(`  No decision in time on ${tool}: ${outcome}.`));
      return;
    }
    switch (decision) {
      case 'approve':
        this.line(`  ${c.bold(tool)} ${c.green('approved')} ${c.dim(`by ${by}`)}`);
        break;
      case 'edit': {
        const args = summariseArguments(JSON.stringify(event.data.arguments ?? {}), 120);
        this.line(`  ${c.bold(tool)} ${c.cyan('edited')} ${c.dim(`by ${by}`)}: ${args}`);
        break;
      }
      case 'reject':
        this.line(
          `  ${c.bold(tool)} ${c.red('rejected')} ${c.dim(`by ${by}`)}${message ? `: ${truncate(message, 200)}` : ''}`,
        );
        break;
    }
  }

  /**
   * A message sent to the live run (`tether steer`), quoted on one line; then that the run took it
   * at a turn boundary, or ended before it could, quoting its start when it was seen here (a
   * follower that joined later names its id instead).
   */
  private showSteering(
    event: RunEvent<'message.received' | 'message.delivered' | 'message.undelivered'>,
  ): void {
    const c = this.c;
    if (event.type === 'message.received') {
      const { messageId, content } = event.data;
      this.messages.set(messageId, content);
      this.line(`  ${c.cyan(this.glyphs.message)} message for the run: "${truncate(oneLine(content), 200)}"`);
      return;
    }
    const { messageId } = event.data;
    const content = this.messages.get(messageId);
    const which = c.dim(content === undefined ? `(${messageId})` : `"${truncate(oneLine(content), 60)}"`);
    if (event.type === 'message.delivered') {
      this.line(`  ${c.green(this.glyphs.delivered)} the run took your message ${which}`);
    } else {
      this.line(`  ${c.yellow(this.glyphs.undelivered)} the run ended before taking your message ${which}`);
    }
  }

  /** How the run ended, with its output when it was not shown already. */
  private showOutcome(event: RunEvent<'run.completed' | 'run.failed' | 'run.cancelled'>): void {
    const c = this.c;
    switch (event.type) {
      case 'run.completed': {
        // The output is the last message as a rule, shown already as it streamed: only a
        // different one (a question returned, an output of its own) is shown.
        // A run with a structured result shows it, as indented JSON, in place of its output.
        const { result } = event.data;
        const output = event.data.output.replace(/\n+$/, '');
        const shown = output === '' || output === this.lastMessage?.replace(/\n+$/, '');
        this.lastMessage = undefined;
        const end = result === undefined ? (shown ? undefined : output) : JSON.stringify(result, null, 2);
        if (this.options.compact) {
          if (end !== undefined) this.line(end);
          this.endLine();
          break;
        }
        this.line('');
        this.line(c.green(c.bold('Completed')));
        if (end !== undefined) this.line(end);
        break;
      }
      case 'run.failed':
        this.line('');
        this.line(c.red(c.bold(`Failed: ${event.data.error.code}`)));
        this.line(c.red(event.data.error.message));
        break;
      case 'run.cancelled':
        this.line('');
        this.line(c.yellow(c.bold(`Cancelled${event.data.reason ? `: ${event.data.reason}` : ''}`)));
        break;
    }
  }

  /** Writes a full line (ending any streamed text first). */
  line(text: string): void {
    this.endLine();
    this.out.write(`${text}\n`);
  }

  /** Ends streamed text with a newline, if it has none yet. */
  endLine(): void {
    if (this.midLine) {
      this.out.write('\n');
      this.midLine = false;
    }
  }

  private write(text: string): void {
    if (text === '') return;
    this.out.write(text);
    this.midLine = !text.endsWith('\n');
  }

  private openTurn(): void {
    if (this.turnOpen) return;
    this.turnOpen = true;
    if (!this.options.compact) this.line(this.c.dim(`-- step ${this.step + 1} --`));
  }

  private toolChunk(callId: string, chunk: string, stream: 'stdout' | 'stderr'): void {
    const state = this.toolOutput.get(callId) ?? { lines: 0, partial: '' };
    this.toolOutput.set(callId, state);
    const parts = (state.partial + chunk).split(/\r?\n/);
    state.partial = parts.pop() ?? '';
    for (const part of parts) this.toolLine(state, part, stream);
  }

  private toolLine(state: { lines: number }, text: string, stream: 'stdout' | 'stderr'): void {
    state.lines++;
    if (state.lines <= TOOL_OUTPUT_LINES) {
      const shown = truncate(text, 160);
      this.line(`    ${this.c.dim('|')} ${stream === 'stderr' ? this.c.yellow(shown) : this.c.dim(shown)}`);
    } else if (state.lines === TOOL_OUTPUT_LINES + 1) {
      this.line(`    ${this.c.dim('| ...')}`);
    }
  }

  private flushToolOutput(callId: string): void {
    const state = this.toolOutput.get(callId);
    if (state && state.partial !== '') this.toolLine(state, state.partial, 'stdout');
    this.toolOutput.delete(callId);
  }
}

/** Text on one line: each run of whitespace (line breaks too) as one space. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** How many children a delegating call asks for: one for `delegate_task`, its task list's length for `delegate_parallel`. */
function delegatedTasks(name: string, args: string): number | undefined {
  if (name === 'delegate_task') return 1;
  try {
    const parsed: unknown = JSON.parse(args);
    const tasks = (parsed as { tasks?: unknown } | null)?.tasks;
    return Array.isArray(tasks) && tasks.length > 0 ? tasks.length : undefined;
  } catch {
    return undefined;
  }
}
