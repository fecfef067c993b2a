import type { ApprovalDecisionBody, PendingApproval, Run, RunStatus } from '@tether/protocol';
import { APPROVAL_LIMITS, RUN_STATUSES } from '@tether/protocol';
import { Option } from 'commander';
import { isRecord } from '../errors.js';
import type { RunTree } from '../tree.js';
import { afterDeadline, decideCommand } from './approval-format.js';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { formatCountdown, formatDuration } from './duration.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { followRun } from './follow.js';
import {
  colorStatus,
  formatTodos,
  liveChildren,
  relativeTime,
  summariseArguments,
  truncate,
  waitingFor,
} from './format.js';
import { EventHistory } from './history.js';
import type { Colors } from './io.js';
import { pageOptions } from './paging.js';
import { formatRunTree } from './run-tree.js';
import { RunView } from './run-view.js';
import { type SteerCommandOptions, steerCommand } from './steer-command.js';

export interface RunsCommandOptions {
  status?: string;
  limit?: string;
  cursor?: string;
  /** `key=value` pairs (repeatable): only runs whose metadata has every one. */
  metadata?: string[];
  json?: boolean;
}

/** `--metadata key=value` pairs as the filter `client.list` takes. */
export function metadataOption(pairs: readonly string[] | undefined): Record<string, string> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const filter: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--metadata must be key=value (got "${pair}")`);
    const key = pair.slice(0, at);
    if (key in filter)
      throw new UsageError(`--metadata names "${key}" twice: each key once (pairs are ANDed)`);
    filter[key] = pair.slice(at + 1);
  }
  return filter;
}

/** `tether runs`: the caller's runs, newest first, one page. */
export async function runsCommand(options: RunsCommandOptions, ctx: CommandContext): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  let status: RunStatus | undefined;
  if (options.status !== undefined) {
    if (!(RUN_STATUSES as readonly string[]).includes(options.status)) {
      throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')} (got "${options.status}")`);
    }
    status = options.status as RunStatus;
  }
  const metadata = metadataOption(options.metadata);
  const page = await client.list({
    ...(status ? { status } : {}),
    ...(metadata ? { metadata } : {}),
    ...pageOptions(options, io),
  });
  if (options.json) {
    io.stdout.write(`${JSON.stringify(page)}\n`);
    return EXIT.ok;
  }
  if (page.data.length === 0) {
    io.stdout.write(`${c.dim('No runs yet. Start one with: tether run "what to do"')}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  const idWidth = Math.max(2, ...page.data.map((r) => r.id.length));
  const statusWidth = Math.max(...page.data.map((r) => r.status.length));
  const created = page.data.map((r) => relativeTime(r.createdAt, now));
  const took = page.data.map((r) => runDuration(r, now));
  const createdWidth = Math.max(7, ...created.map((text) => text.length));
  const tookWidth = Math.max(4, ...took.map((text) => text.length));
  io.stdout.write(
    `${c.dim(`${'ID'.padEnd(idWidth)}  ${'STATUS'.padEnd(statusWidth)}  ${'CREATED'.padEnd(createdWidth)}  ${'TOOK'.padEnd(tookWidth)}  TASK`)}\n`,
  );
  for (const [index, run] of page.data.entries()) {
    const pad = ' '.repeat(statusWidth - run.status.length);
    const calls = run.pendingToolCalls ?? [];
    const approvals = run.pendingApprovals ?? [];
    const waiting = run.pendingClarify
      ? c.magenta(`  ? ${truncate(run.pendingClarify.question, 50)}`)
      : calls.length > 0
        ? c.magenta(`  waiting for tool output: ${truncate(calls.map((call) => call.name).join(', '), 50)}`)
        : approvals.length > 0
          ? c.magenta(`  waiting for approval: ${truncate(approvals.map((a) => a.tool).join(', '), 50)}`)
          : run.status === 'waiting_for_children' && run.children
            ? c.blue(`  ${waitingFor(liveChildren(run))}`)
            : run.status === 'scheduled' && run.runAt
              ? c.blue(`  starts ${relativeTime(run.runAt, now)}`)
              : '';
    const when = `${(created[index] ?? '').padEnd(createdWidth)}  ${(took[index] ?? '').padEnd(tookWidth)}`;
    const task = truncate(run.title ?? '', 60);
    io.stdout.write(
      `${run.id.padEnd(idWidth)}  ${colorStatus(run.status, c)}${pad}  ${when}  ${task}${waiting}\n`,
    );
  }
  if (page.nextCursor) {
    const filters = [
      ...(options.status ? [`--status ${options.status}`] : []),
      ...(options.metadata ?? []).map((pair) => `--metadata ${JSON.stringify(pair)}`),
    ];
    io.stdout.write(
      `${c.dim(`More: tether runs ${[...filters, `--cursor ${page.nextCursor}`].join(' ')}`)}\n`,
    );
  }
  return EXIT.ok;
}

/**
 * How long a run took (from its start to its end), or has been running so far; `-` before it started.
 */
function runDuration(run: Run, now: number): string {
  if (!run.startedAt) return '-';
  const end = run.finishedAt ? Date.parse(run.finishedAt) : now;
  return formatDuration(Math.max(0, end - Date.parse(run.startedAt)));
}

/** `tether show ID`: one run in detail, and a crew parent's tree of children. */
export async function showCommand(
  id: string,
  options: { json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io } = ctx;
  const signal = io.signal ? { signal: io.signal } : {};
  if (options.json) {
    const run = await client.get(id, signal);
    io.stdout.write(`${JSON.stringify(run)}\n`);
    return EXIT.ok;
  }
  const tree = await client.tree(id, signal);
  io.stdout.write(formatRun(tree.run, ctx, tree).join('\n'));
  io.stdout.write('\n');
  return EXIT.ok;
}

/** A run's fields, its todos, its question, the tree of its children (given `tree`), and its outcome. */
export function formatRun(
  run: Run,
  ctx: Pick<CommandContext, 'colors' | 'now'>,
  tree?: RunTree | undefined,
): string[] {
  const c = ctx.colors;
  const now = (ctx.now ?? Date.now)();
  const lines = [`${c.bold(run.id)}  ${colorStatus(run.status, c)}`];
  const field = (name: string, value: string) => lines.push(`${c.dim(name.padEnd(10))}${value}`);
  if (run.title) field('task', run.title);
  field('created', `${run.createdAt} (${relativeTime(run.createdAt, now)})`);
  if (run.runAt && !run.startedAt) field('starts', `${run.runAt} (${relativeTime(run.runAt, now)})`);
  if (run.expiresAt && !run.startedAt)
    field('expires', `${run.expiresAt} (${relativeTime(run.expiresAt, now)})`);
  if (run.startedAt) field('started', run.startedAt);
  if (run.finishedAt) {
    const took = run.startedAt
      ? ` (took ${formatDuration(Date.parse(run.finishedAt) - Date.parse(run.startedAt))})`
      : '';
    field('finished', `${run.finishedAt}${took}`);
  }
  if (run.parentRunId) {
    const root = run.rootRunId && run.rootRunId !== run.parentRunId ? `, root ${run.rootRunId}` : '';
    field('parent', `${run.parentRunId} (depth ${run.depth ?? 1}${root})`);
  }
  field('attempts', String(run.attempts));
  if (run.model) {
    const { name, profile } = run.model;
    field('model', name === profile ? name : `${name} ${c.dim(`(profile ${profile})`)}`);
  }
  if (run.usage) field('tokens', `${run.usage.inputTokens} in, ${run.usage.outputTokens} out`);
  if (run.todos.length > 0) {
    lines.push(c.dim('todos'));
    lines.push(...formatTodos(run.todos, c));
  }
  if (run.pendingClarify) {
    const q = run.pendingClarify;
    lines.push(
      '',
      `${c.magenta('?')} ${c.bold(q.question)} ${c.dim(`(${formatCountdown(Date.parse(q.expiresAt) - now)} left)`)}`,
    );
    q.choices.forEach((choice, i) => {
      lines.push(`    ${c.dim(`${i + 1}.`)} ${choice}`);
    });
    lines.push(c.dim(`  answer with: tether answer ${run.id} ${q.requestId} "your answer"`));
  }
  if (run.pendingToolCalls && run.pendingToolCalls.length > 0) {
    const [first] = run.pendingToolCalls;
    const left = first ? formatCountdown(Date.parse(first.expiresAt) - now) : '';
    lines.push('', `${c.magenta('Waiting for client tool outputs')} ${c.dim(`(${left} left)`)}`);
    for (const call of run.pendingToolCalls) {
      lines.push(
        `  ${c.cyan('>')} ${c.bold(call.name)} ${c.dim(summariseArguments(JSON.stringify(call.arguments)))}`,
        c.dim(`    request ${call.requestId}: POST /v1/runs/${run.id}/tool-outputs/${call.requestId}`),
      );
    }
  }
  if (run.pendingApprovals && run.pendingApprovals.length > 0) {
    lines.push('', ...formatPendingApprovals(run.id, run.pendingApprovals, c, now));
  }
  if (tree && tree.children.length > 0) lines.push('', ...formatRunTree(tree, c));
  if (run.error) lines.push('', c.red(`${run.error.code}: ${run.error.message}`));
  if (run.output !== undefined) lines.push('', c.bold('Output'), run.output.replace(/\n+$/, ''));
  return lines;
}

/** The tool calls a run waits to have decided: each with why it asks, its arguments, its time left and how to decide. */
function formatPendingApprovals(
  runId: string,
  approvals: readonly PendingApproval[],
  c: Colors,
  now: number,
): string[] {
  const lines = [c.magenta(`Waiting for approval (${approvals.length})`)];
  for (const approval of approvals) {
    const left = formatCountdown(Date.parse(approval.expiresAt) - now);
    const args =
      typeof approval.arguments === 'string' ? approval.arguments : JSON.stringify(approval.arguments);
    lines.push(
      `  ${c.magenta('!')} ${c.bold(approval.tool)} ${c.dim(`(${approval.reason}) ${left} left; then ${afterDeadline(approval.onTimeout)}`)}`,
      `    ${summariseArguments(args, 100)}`,
      c.dim(`    decide with: ${decideCommand(runId, approval.requestId)}`),
    );
  }
  return lines;
}

/**
 * `tether logs ID`: the events so far (the JSON page route), a question or a
 * client tool call settled later shown without the time that was left; with
 * `--follow`, then the live stream from there to the end, exiting as `run`
 * does.
 */
export async function logsCommand(
  id: string,
  options: { follow?: boolean; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const view = options.json
    ? undefined
    : new RunView(io.stdout, c, {
        answerHint: (req) => `answer with: tether answer ${id} ${req} "your answer"`,
        decideHint: (run, req) => `decide with: ${decideCommand(run, req)}`,
        ...(ctx.now ? { now: ctx.now } : {}),
      });
  const history = new EventHistory((event, settled) => {
    if (view) view.render(event, { settled });
    else io.stdout.write(`${JSON.stringify(event)}\n`);
  });
  let after: string | undefined;
  while (true) {
    const page = await client.events(id, {
      limit: 500,
      ...(after ? { after } : {}),
      ...(io.signal ? { signal: io.signal } : {}),
    });
    for (const event of page.data) history.push(event);
    // The cursor stays put while a live run has nothing new: that is the end of "so far".
    if (page.data.length === 0 || page.nextCursor === null) break;
    after = page.nextCursor;
  }
  history.end();
  if (!options.follow) {
    view?.endLine();
    return EXIT.ok;
  }
  let terminal = history.terminal;
  if (!terminal) {
    ({ terminal } = await followRun({
      client,
      runId: id,
      stdout: io.stdout,
      stdin: io.stdin,
      colors: c,
      json: options.json === true,
      prompt: false,
      signal: io.signal,
      lastEventId: history.last?.id,
      view,
      ...(ctx.now ? { now: ctx.now } : {}),
    }));
  }
  view?.endLine();
  return terminal?.type === 'run.completed' ? EXIT.ok : EXIT.failed;
}

/** `tether answer ID REQUEST "text"`. */
export async function answerCommand(
  id: string,
  requestId: string,
  text: string,
  ctx: CommandContext,
): Promise<ExitCode> {
  if (text.trim() === '') throw new UsageError('the answer must not be empty');
  await ctx.client.answer(id, requestId, text, ctx.io.signal ? { signal: ctx.io.signal } : {});
  ctx.io.stdout.write(`Answer sent to ${id} (${requestId}).\n`);
  return EXIT.ok;
}

export interface ApproveCommandOptions {
  /** The arguments the call runs with instead, as JSON. */
  edit?: string;
  /** Rejects the call; a string is the message the model is told. */
  reject?: string | true;
}

/** The decision `tether approve`'s flags ask for: approve unless `--edit` or `--reject`. Throws `UsageError` for bad ones. */
export function decisionFromFlags(options: ApproveCommandOptions): ApprovalDecisionBody {
  if (options.edit !== undefined && options.reject !== undefined) {
    throw new UsageError('--edit and --reject cannot be used together');
  }
  if (options.edit !== undefined) {
    const example = `--edit '{"path": "notes.txt"}'`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(options.edit);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new UsageError(`--edit must be the arguments as a JSON object, such as ${example} (${why})`);
    }
    if (!isRecord(parsed)) throw new UsageError(`--edit must be a JSON object, such as ${example}`);
    return { decision: 'edit', arguments: parsed };
  }
  if (options.reject !== undefined) {
    const message = options.reject === true ? '' : options.reject.trim();
    if (message.length > APPROVAL_LIMITS.messageMaxLength) {
      throw new UsageError(
        `--reject's message must be at most ${APPROVAL_LIMITS.messageMaxLength} characters (got ${message.length})`,
      );
    }
    return message === '' ? { decision: 'reject' } : { decision: 'reject', message };
  }
  return { decision: 'approve' };
}

/** `tether approve ID REQUEST [--edit JSON | --reject [MESSAGE]]`: a decision on a tool call the run holds. */
export async function approveCommand(
  id: string,
  requestId: string,
  options: ApproveCommandOptions,
  ctx: CommandContext,
): Promise<ExitCode> {
  const decision = decisionFromFlags(options);
  await ctx.client.decide(id, requestId, decision, ctx.io.signal ? { signal: ctx.io.signal } : {});
  const outcome = {
    approve: 'Approved: the call runs.',
    edit: 'Edited: the call runs with the new arguments.',
    reject: 'Rejected: the call does not run, and the model is told.',
  }[decision.decision];
  ctx.io.stdout.write(`${outcome} (${id}, ${requestId})\n`);
  return EXIT.ok;
}

/** `tether rm ID`: an ended run and everything it left. */
export async function removeCommand(id: string, ctx: CommandContext): Promise<ExitCode> {
  await ctx.client.delete(id, ctx.io.signal ? { signal: ctx.io.signal } : {});
  ctx.io.stdout.write(`Deleted ${id}.\n`);
  return EXIT.ok;
}

/** `tether retry ID`: a failed or cancelled run again, as a new run (its id printed). */
export async function retryCommand(
  id: string,
  options: { json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const created = await ctx.client.retry(id, ctx.io.signal ? { signal: ctx.io.signal } : {});
  if (options.json) {
    ctx.io.stdout.write(`${JSON.stringify(created)}\n`);
    return EXIT.ok;
  }
  ctx.io.stdout.write(`Retrying ${id} as ${created.id}. Follow it: tether logs ${created.id} --follow\n`);
  return EXIT.ok;
}

/** `tether cancel ID`. */
export async function cancelCommand(id: string, ctx: CommandContext): Promise<ExitCode> {
  await ctx.client.cancel(id, ctx.io.signal ? { signal: ctx.io.signal } : {});
  ctx.io.stdout.write(`Cancellation requested for ${id}.\n`);
  return EXIT.ok;
}

/**
 * Adds the commands on one run: `runs`, `show`, `logs`, `answer`, `approve`, `steer`, `cancel`,
 * `retry`, `rm`.
 */
export const registerRunsCommands: RegisterCommand = (program, context, done) => {
  program
    .command('runs')
    .description('list your runs, newest first')
    .option('--status <status>', 'only runs in this status')
    .option(
      '--metadata <key=value>',
      'only runs whose metadata has this pair (repeat: all of them)',
      repeatable,
    )
    .option('--limit <n>', 'runs per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (options) => {
      done(await runsCommand(options, context()));
    });

  program
    .command('show')
    .description(
      'show one run: status, todos, pending question or approvals, the tree of its crew children, output',
    )
    .argument('<id>', 'run id')
    .option('--json', 'print the run as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      done(await showCommand(id, options, context()));
    });

  program
    .command('logs')
    .description("print a run's events; --follow keeps following to the end")
    .argument('<id>', 'run id')
    .option('-f, --follow', 'follow live events until the run ends')
    .option('--json', 'print events as JSON lines')
    .action(async (id: string, options: { follow?: boolean; json?: boolean }) => {
      const ctx = context();
      // The run is known before following it: Ctrl-C's hint names it.
      ctx.onRun?.(id);
      done(await logsCommand(id, options, ctx));
    });

  program
    .command('answer')
    .description("answer a run's question")
    .argument('<id>', 'run id')
    .argument('<request>', 'the question id (see tether show ID)')
    .argument('<text>', 'the answer')
    .action(async (id: string, request: string, text: string) => {
      done(await answerCommand(id, request, text, context()));
    });

  program
    .command('approve')
    .description('decide on a tool call a run waits on: approve it, or --edit its arguments, or --reject it')
    .argument('<id>', 'run id')
    .argument('<request>', 'the approval request id (see tether show ID)')
    .addOption(
      new Option('--edit <json>', 'run it with these arguments instead (a JSON object)').conflicts('reject'),
    )
    .addOption(new Option('--reject [message]', 'do not run it; the message is told to the model'))
    .action(async (id: string, request: string, options: ApproveCommandOptions) => {
      done(await approveCommand(id, request, options, context()));
    });

  program
    .command('steer')
    .description('send a message to a live run; it takes it at its next turn boundary, without stopping')
    .argument('<id>', 'run id')
    .argument('<message...>', 'the message (the words joined), or - to read it from stdin')
    .option('--json', "print the API's answer ({ messageId }) as JSON")
    .action(async (id: string, words: string[], options: SteerCommandOptions) => {
      done(await steerCommand(id, words, options, context()));
    });

  program
    .command('cancel')
    .description('cancel a run')
    .argument('<id>', 'run id')
    .action(async (id: string) => {
      done(await cancelCommand(id, context()));
    });

  program
    .command('retry')
    .description('run a failed or cancelled run again, as a new run with the same request')
    .argument('<id>', 'run id')
    .option('--json', 'print the new run as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      done(await retryCommand(id, options, context()));
    });

  program
    .command('rm')
    .description('delete an ended run: its record, events and workspace (cancel a live one first)')
    .argument('<id>', 'run id')
    .action(async (id: string) => {
      done(await removeCommand(id, context()));
    });
};
