import { constants as osConstants } from 'node:os';
import { Type } from '@sinclair/typebox';
import type { CgroupSupport, CommandCgroup } from '../cgroup.js';
import { createCgroup, sandboxResolver } from '../command-sandbox.js';
import { defineTool } from '../define-tool.js';
import { ToolError } from '../errors.js';
import type { ToolLimits } from '../limits.js';
import { type CommandSandbox, PreparedCommand, type RunCommandResult, runCommand } from '../run-command.js';
import { callSignal, type ToolEnvironment, throwIfCancelled } from '../tool-environment.js';
import type { Tool, ToolResult, ToolSchema } from '../types.js';

/** Parameters of `bash`. */
export const BashParams = Type.Object(
  {
    command: Type.String({ minLength: 1, description: 'The bash command line to run in the workspace' }),
    timeout: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        description:
          'Seconds before the command and every process it started are killed. Default 120; larger values are lowered to the maximum (1800 by default).',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Catalog entry of `bash` (toolset `base`). */
export const bashSchema: ToolSchema<typeof BashParams> = {
  name: 'bash',
  toolset: 'base',
  description:
    'Run a bash command in the workspace (the working directory) and get its exit code and output (stdout and stderr together; long output keeps its start and end). Processes do not outlive the call: no background servers. Network access may be off.',
  parameters: BashParams,
};

const SIGNAL_NAMES = new Map<number, string>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name]),
);

function seconds(ms: number): string {
  return ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(1);
}

function signalNote(name: string, result: RunCommandResult, limits: Readonly<ToolLimits>): string {
  if (name === 'SIGXFSZ') return ` (a file grew past the limit of ${limits.bashFileSizeBytes} bytes)`;
  if (name === 'SIGXCPU') return ` (the CPU time limit of ${limits.bashCpuSeconds} s was reached)`;
  if (name === 'SIGKILL' && result.limits?.oomKilled) return ' (the memory limit was reached)';
  if (name === 'SIGKILL' && result.limits === undefined) return ' (possibly out of memory)';
  return '';
}

function mebibytes(bytes: number): string {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
}

/** What the model should know about a cgroup limit the kernel enforced. */
function limitNotes(result: RunCommandResult, limits: Readonly<ToolLimits>): string[] {
  const notes: string[] = [];
  if (result.limits?.oomKilled) {
    notes.push(
      `[Memory limit: a process was killed by the kernel for using more than ${mebibytes(limits.bashMemoryBytes)} (files in /tmp count too). Use less memory: process the data in smaller pieces, stream it instead of loading it whole, or keep large files in the workspace instead of /tmp.]`,
    );
  }
  if (result.limits?.pidsLimitHit) {
    notes.push(
      `[Process limit: the command reached ${limits.bashMaxProcesses} processes and threads at once, so starting more failed. Start fewer processes in parallel (for example make -j4, xargs -P4).]`,
    );
  }
  return notes;
}

/** The model-facing result of a finished command. */
export function formatCommandResult(
  result: RunCommandResult,
  context: { timeoutMs: number; requestedMs: number; limits: Readonly<ToolLimits> },
): ToolResult {
  const { limits } = context;
  const lines: string[] = [];
  let ok = false;
  let code: string | undefined;
  if (result.outcome === 'timeout') {
    code = 'ERR_TOOL_BASH_TIMEOUT';
    lines.push(
      `Timed out after ${seconds(context.timeoutMs)} s: the command and every process it started were killed. If it needs longer, pass a larger timeout (at most ${seconds(limits.bashMaxTimeoutMs)} s), or split the work into shorter commands.`,
    );
  } else if (result.outcome === 'cancelled') {
    code = 'ERR_TOOL_CANCELLED';
    lines.push('Cancelled: the command and every process it started were killed.');
  } else if (result.exitSignal !== null) {
    code = 'ERR_TOOL_BASH_EXIT';
    lines.push(`Killed by signal ${result.exitSignal}${signalNote(result.exitSignal, result, limits)}.`);
  } else {
    const exitCode = result.exitCode ?? -1;
    ok = exitCode === 0;
    if (!ok) code = 'ERR_TOOL_BASH_EXIT';
    let line = `Exit code: ${exitCode}`;
    const signal = exitCode > 128 ? SIGNAL_NAMES.get(exitCode - 128) : undefined;
    if (signal !== undefined)
      line += ` (128 + ${exitCode - 128}: probably killed by ${signal}${signalNote(signal, result, limits)})`;
    lines.push(line);
  }
  lines.push(...limitNotes(result, limits));
  if (context.requestedMs > context.timeoutMs) {
    lines.push(
      `[The requested timeout of ${seconds(context.requestedMs)} s was lowered to the maximum, ${seconds(context.timeoutMs)} s.]`,
    );
  }
  if (result.survivors.length > 0) {
    lines.push(`[Warning: ${result.survivors.length} process(es) could not be killed.]`);
  }
  lines.push(result.output === '' ? '(no output)' : `Output:\n${result.output}`);
  return code === undefined ? { ok, content: lines.join('\n') } : { ok, content: lines.join('\n'), code };
}

/**
 * Commands longer than this (in bytes) get a sandbox of their own, started for
 * them: a prepared sandbox reads its command a byte at a time.
 */
const PREPARED_COMMAND_BYTES = 16 * 1024;

/** A prepared sandbox that no command took for this long is discarded (the run may have ended). */
const PREPARED_IDLE_MS = 60_000;

/**
 * A call that starts within this long of the previous call's end came back to
 * back (a script's calls, several calls of one model turn): the sandbox
 * prepared after the previous command is still starting (20 to 40 ms on a
 * quiet 2-core VM), and the next call will likely come as fast. Its next
 * sandbox is then prepared while its command runs, not after.
 */
const BACK_TO_BACK_MS = 50;

/** The sandbox prepared for a run's next command, with its cgroup. */
interface Prepared {
  command: PreparedCommand;
  cgroup: CommandCgroup | undefined;
  idle: NodeJS.Timeout;
}

/** Kills a prepared sandbox that no command took, and removes its cgroup. */
async function release(prepared: Prepared): Promise<void> {
  clearTimeout(prepared.idle);
  await prepared.command.discard();
  await prepared.cgroup?.remove();
}

/**
 * Makes `bash` for a run. The sandbox mode is resolved at the first call (the
 * bwrap probe and the cgroup detection are cached per process); running
 * without a sandbox, or without cgroup limits, is logged once per run as a
 * warning.
 *
 * After each command, the next command's sandbox is prepared (its cgroup made,
 * its launcher, watchdog and bubblewrap started, waiting for the command; see
 * {@link PreparedCommand}), so that the next call only sends its command. A
 * prepared sandbox is discarded when the run is cancelled, when the tool is
 * closed, and after {@link PREPARED_IDLE_MS} unused; a call that finds none
 * ready to take starts its own, as the first call does. When calls come back to
 * back ({@link BACK_TO_BACK_MS}), the next command's sandbox is prepared as soon
 * as the command is sent, so that it starts while the command runs.
 */
export function createBashTool(environment: ToolEnvironment): Tool {
  const { ctx, limits, logger } = environment;
  const resolveSandbox = sandboxResolver(environment, 'bash');
  const sandboxes = nextSandbox(environment);
  /** When the last call returned (`performance.now()`). */
  let lastEnd = Number.NEGATIVE_INFINITY;

  const tool = defineTool(bashSchema, async (args, call) => {
    const backToBack = performance.now() - lastEnd < BACK_TO_BACK_MS;
    const signal = callSignal(environment, call.signal);
    throwIfCancelled(signal, 'bash');
    if (args.command.includes('\0')) {
      throw new ToolError(
        'ERR_TOOL_ARGS_INVALID',
        'The command contains a NUL byte, which bash cannot receive.',
      );
    }
    const { support, spec } = await resolveSandbox();
    const requestedMs = args.timeout === undefined ? limits.bashTimeoutMs : Math.ceil(args.timeout * 1000);
    const timeoutMs = Math.min(requestedMs, limits.bashMaxTimeoutMs);
    const commandCall = commandCallOf(environment, call.callId, args.command, timeoutMs, signal);
    const prepared = await sandboxes.take(spec.workspace, args.command);
    const usePrepared = prepared?.command.usable === true;
    let cgroup: CommandCgroup | undefined;
    let running: Promise<RunCommandResult>;
    // No await between the check and the run: a prepared sandbox that exited meanwhile is not used.
    if (usePrepared && prepared !== undefined) {
      cgroup = prepared.cgroup;
      running = prepared.command.run(commandCall);
    } else {
      if (prepared !== undefined) void release(prepared).catch(() => undefined);
      cgroup = await createCgroup(environment, support, 'bash');
      running = runCommand({ ...spec, cgroup, ...commandCall });
    }
    if (backToBack) sandboxes.prepare(support, spec);
    const result = await running.finally(() => {
      lastEnd = performance.now();
      // Every process of the command is dead by now (runCommand killed the cgroup): removing the empty
      // group need not delay the result.
      void cgroup?.remove().catch((error: unknown) => {
        logger.warn({ err: error, runId: ctx.runId }, "a command's cgroup could not be removed");
      });
      sandboxes.prepare(support, spec);
    });
    logFinished(environment, call.callId, result, { prepared: usePrepared, preparedAhead: backToBack });
    return formatCommandResult(result, { timeoutMs, requestedMs, limits });
  });

  return {
    ...tool,
    async close() {
      await sandboxes.close();
    },
  };
}

/** A call's command for `runCommand` or a prepared sandbox: its limits, and its output streamed as events. */
function commandCallOf(
  environment: ToolEnvironment,
  callId: string,
  command: string,
  timeoutMs: number,
  signal: AbortSignal,
) {
  const { ctx, limits, logger } = environment;
  return {
    command,
    timeoutMs,
    signal,
    outputBytes: limits.bashOutputBytes,
    streamBytes: limits.bashStreamBytes,
    onOutput: (stream: 'stdout' | 'stderr', chunk: string) => {
      try {
        ctx.emit({ type: 'tool.output', data: { callId, stream, chunk } });
      } catch (error) {
        logger.warn({ err: error, runId: ctx.runId, callId }, 'tool.output could not be emitted');
      }
    },
  };
}

/** Logs a finished command: a warning for processes it left behind, and a debug line. */
function logFinished(
  { ctx, logger }: ToolEnvironment,
  callId: string,
  result: RunCommandResult,
  how: { prepared: boolean; preparedAhead: boolean },
): void {
  if (result.survivors.length > 0) {
    logger.warn({ runId: ctx.runId, callId, pids: result.survivors }, 'bash left processes behind');
  }
  logger.debug(
    {
      runId: ctx.runId,
      callId,
      outcome: result.outcome,
      exitCode: result.exitCode,
      ms: result.durationMs,
      prepared: how.prepared,
      preparedAhead: how.preparedAhead,
    },
    'bash finished',
  );
}

/**
 * A run's next sandbox: at most one, being prepared in the background or waiting for a command.
 * It is discarded when the run is cancelled, when closed, and after {@link PREPARED_IDLE_MS} unused.
 */
function nextSandbox(environment: ToolEnvironment) {
  const { ctx, logger } = environment;
  let closed = false;
  /** The next command's sandbox, while it is being prepared or waits. */
  let next: Promise<Prepared | undefined> | undefined;

  const discard = (): Promise<void> => {
    const pending = next;
    next = undefined;
    return (pending ?? Promise.resolve(undefined))
      .then((prepared) => (prepared === undefined ? undefined : release(prepared)))
      .catch((error: unknown) => {
        logger.warn({ err: error, runId: ctx.runId }, 'a prepared sandbox could not be discarded');
      });
  };
  ctx.signal.addEventListener('abort', () => void discard(), { once: true });

  return {
    /** Starts the sandbox of the next command in the background, unless one is pending or the run is over. */
    prepare(support: CgroupSupport, spec: Omit<CommandSandbox, 'cgroup'>): void {
      if (next !== undefined || closed || ctx.signal.aborted) return;
      const pending: Promise<Prepared | undefined> = prepareSandbox(
        environment,
        support,
        spec,
        () => !closed && !ctx.signal.aborted,
        () => {
          if (next === pending) void discard();
        },
      );
      next = pending;
    },

    /**
     * The prepared sandbox, when there is one that fits the call (it may still be
     * starting); any other is discarded. Check `usable` in the tick that runs it.
     */
    async take(workspace: string, command: string): Promise<Prepared | undefined> {
      const pending = next;
      next = undefined;
      const prepared = pending === undefined ? undefined : await pending;
      if (prepared === undefined) return undefined;
      clearTimeout(prepared.idle);
      // Not a command that names the end line's prefix either: no line of it can end the reading early.
      const fits =
        prepared.command.options.workspace === workspace &&
        Buffer.byteLength(command) <= PREPARED_COMMAND_BYTES &&
        !command.includes('tether-end-');
      if (fits && prepared.command.usable) return prepared;
      void release(prepared).catch(() => undefined);
      return undefined;
    },

    /** No more sandboxes: the one pending or waiting is discarded. */
    async close(): Promise<void> {
      closed = true;
      await discard();
    },
  };
}

/**
 * Prepares a sandbox (its cgroup, then the command waiting in it), or undefined when it is no longer
 * `wanted` or fails; `onIdle` is told once it has waited {@link PREPARED_IDLE_MS} unused.
 */
async function prepareSandbox(
  environment: ToolEnvironment,
  support: CgroupSupport,
  spec: Omit<CommandSandbox, 'cgroup'>,
  wanted: () => boolean,
  onIdle: () => void,
): Promise<Prepared | undefined> {
  // Not before the current call's result has reached its caller, nor before its command is
  // sent: the cgroup is made synchronously and the spawn blocks the event loop for a fork and
  // an exec (10 to 40 ms on a busy 2-core host), which would otherwise land on the call's path.
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (!wanted()) return undefined;
  let cgroup: CommandCgroup | undefined;
  try {
    cgroup = await createCgroup(environment, support, 'bash');
    const command = await PreparedCommand.prepare({ ...spec, cgroup });
    const idle = setTimeout(onIdle, PREPARED_IDLE_MS);
    idle.unref();
    return { command, cgroup, idle };
  } catch {
    // The next call starts its own sandbox, and reports what fails then.
    await cgroup?.remove().catch(() => undefined);
    return undefined;
  }
}
