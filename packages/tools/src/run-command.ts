/**
 * Runs one shell command to completion, timeout or cancel, with bounded
 * memory, and leaves no process behind.
 *
 * The command is `bash -c` under `prlimit`, inside bubblewrap or not, spawned
 * as the leader of a new process group with a cleared environment and stdin
 * closed. stdout and stderr go to one {@link OutputCapture} (first and last
 * bytes only) and, up to a byte budget, to the live-output callback. When the
 * command exits, times out or is cancelled, every process it started is
 * killed (see `process-tree.ts`): background jobs do not outlive the call.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { ToolError } from './errors.js';
import { OutputCapture } from './output-capture.js';
import { killProcessTree } from './process-tree.js';
import { buildBwrapArgs, buildCommandEnv, buildPrlimitArgs } from './sandbox.js';

/** After the command is gone, how long its pipes may stay open (held by an escaped process) before they are closed. */
const PIPE_GRACE_MS = 2000;

/** Everything one command run needs. */
export interface RunCommandOptions {
  command: string;
  /** Real path of the workspace: the working directory (and, under bwrap, the only writable host directory). */
  workspace: string;
  sandbox: 'bwrap' | 'none';
  /** Absolute paths of the programs; `bwrap` is needed only for the bwrap sandbox. */
  programs: { bash: string; prlimit: string; bwrap?: string | undefined };
  allowNetwork: boolean;
  /** Variables set over the allow-list. */
  env: Readonly<Record<string, string>>;
  timeoutMs: number;
  signal: AbortSignal;
  /** Bytes of output kept for the result. */
  outputBytes: number;
  /** Bytes of output passed to `onOutput` before live output stops. */
  streamBytes: number;
  tmpBytes: number;
  fileSizeBytes: number;
  cpuSeconds: number;
  openFiles: number;
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void;
}

/** How a command ended and what it printed. */
export interface RunCommandResult {
  outcome: 'exited' | 'timeout' | 'cancelled';
  /** Exit code of the command (of bwrap, which passes the command's on, under the sandbox). */
  exitCode: number | null;
  /** Signal that ended the spawned process, if any. */
  exitSignal: NodeJS.Signals | null;
  /** Combined stdout and stderr, cut in the middle when longer than `outputBytes`. */
  output: string;
  totalBytes: number;
  omittedBytes: number;
  /** Whether live output stopped at `streamBytes`. */
  streamTruncated: boolean;
  durationMs: number;
  /** Pids that could not be killed (expected empty). */
  survivors: number[];
}

/**
 * Runs `options.command` and resolves when it is over and all its processes
 * are dead.
 * @throws ToolError `ERR_TOOL_SPAWN_FAILED` when the process cannot be started
 */
export function runCommand(options: RunCommandOptions): Promise<RunCommandResult> {
  const tag = randomBytes(12).toString('hex');
  const env = buildCommandEnv(options.workspace, options.env, tag);
  const inner = [
    options.programs.prlimit,
    ...buildPrlimitArgs({
      fileSizeBytes: options.fileSizeBytes,
      cpuSeconds: options.cpuSeconds,
      openFiles: options.openFiles,
    }),
    '--',
    options.programs.bash,
    '-c',
    options.command,
  ];
  let file: string;
  let args: string[];
  if (options.sandbox === 'bwrap') {
    if (options.programs.bwrap === undefined) {
      return Promise.reject(
        new ToolError('ERR_TOOL_SANDBOX_UNAVAILABLE', 'bwrap is not installed on this host.'),
      );
    }
    file = options.programs.bwrap;
    args = [
      ...buildBwrapArgs({
        workspace: options.workspace,
        allowNetwork: options.allowNetwork,
        tmpBytes: options.tmpBytes,
      }),
      '--',
      ...inner,
    ];
  } else {
    file = inner[0] as string;
    args = inner.slice(1);
  }

  const started = performance.now();
  let child: ChildProcessByStdio<null, Readable, Readable>;
  try {
    child = spawn(file, args, {
      cwd: options.workspace,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    return Promise.reject(spawnFailure(error));
  }

  return new Promise<RunCommandResult>((resolve, reject) => {
    const capture = new OutputCapture(options.outputBytes);
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    let streamed = 0;
    let streamTruncated = false;
    let outcome: RunCommandResult['outcome'] = 'exited';
    let exited = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let settled = false;
    let guard: NodeJS.Timeout | undefined;
    const kills: Promise<number[]>[] = [];

    const emit = (stream: 'stdout' | 'stderr', text: string): void => {
      if (text !== '' && options.onOutput !== undefined) options.onOutput(stream, text);
    };

    const onData = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      capture.push(chunk);
      if (options.onOutput === undefined || streamTruncated) return;
      const room = options.streamBytes - streamed;
      if (chunk.length <= room) {
        streamed += chunk.length;
        emit(stream, decoders[stream].write(chunk));
        return;
      }
      streamTruncated = true;
      streamed += room;
      emit(stream, decoders[stream].write(chunk.subarray(0, room)) + decoders[stream].end());
      emit(
        stream,
        `\n[live output stopped after ${options.streamBytes} bytes; the command keeps running, and its result keeps the start and the end of the output]\n`,
      );
    };

    const finish = async (): Promise<void> => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(guard);
      options.signal.removeEventListener('abort', onAbort);
      if (!streamTruncated) {
        emit('stdout', decoders.stdout.end());
        emit('stderr', decoders.stderr.end());
      }
      const survivors = (await Promise.all(kills)).at(-1) ?? [];
      resolve({
        outcome,
        exitCode,
        exitSignal,
        output: capture.text(),
        totalBytes: capture.totalBytes,
        omittedBytes: capture.omittedBytes,
        streamTruncated,
        durationMs: Math.round(performance.now() - started),
        survivors,
      });
    };

    /** Kills everything the command started; once the command is gone, gives its pipes a grace period. */
    const killAll = (reason?: 'timeout' | 'cancelled'): void => {
      if (settled || child.pid === undefined) return;
      if (reason !== undefined && !exited && outcome === 'exited') outcome = reason;
      kills.push(killProcessTree({ pid: child.pid, tag, rootAlive: () => !exited }));
      guard ??= setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        void finish();
      }, PIPE_GRACE_MS);
    };

    const onAbort = (): void => killAll('cancelled');
    const timer = setTimeout(() => killAll('timeout'), options.timeoutMs);

    child.stdout?.on('data', onData('stdout'));
    child.stderr?.on('data', onData('stderr'));
    child.on('error', (error) => {
      if (child.pid !== undefined) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      reject(spawnFailure(error));
    });
    child.on('exit', (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      clearTimeout(timer);
      // Background jobs and detached grandchildren do not outlive the call.
      killAll();
    });
    child.on('close', () => void finish());

    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A process that could not be started, as a model-facing error. */
function spawnFailure(error: unknown): ToolError {
  const message = error instanceof Error ? error.message : String(error);
  const tooLong =
    (error as NodeJS.ErrnoException).code === 'E2BIG'
      ? ' The command is too long to pass to bash: write it to a script file with write_file and run the script.'
      : '';
  return new ToolError('ERR_TOOL_SPAWN_FAILED', `The command could not be started: ${message}.${tooLong}`, {
    cause: error,
  });
}
