/**
 * Runs one shell command to completion, timeout or cancel, with bounded
 * memory, and leaves no process behind.
 *
 * The command is `bash -c` with its rlimits, inside bubblewrap or not, started
 * by a small launcher ({@link LAUNCHER}) spawned as the leader of a new
 * process group with a cleared environment. The launcher starts a watchdog,
 * enters the command's cgroup (when there is one), so nothing of the command
 * ever runs outside it, and execs the sandbox. The watchdog waits on the
 * worker's lease (see `command-lease.ts`): when the worker dies (at any moment
 * of the launch included) or stops answering for `leaseMs` (a stopped or
 * frozen worker), it kills the launcher, the cgroup and the process group, so
 * a command never outlives the worker that owns it.
 *
 * stdout and stderr go to one {@link OutputCapture} (first and last bytes
 * only) and, up to a byte budget, to the live-output callback. When the
 * command exits, times out or is cancelled, every process it started is
 * killed (its cgroup, and see `process-tree.ts`): background jobs do not
 * outlive the call.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { type CgroupVerdict, type CommandCgroup, cgroupSupport, killRunCgroups } from './cgroup.js';
import { commandLease } from './command-lease.js';
import {
  SpawnedProcess,
  type SpawnRequest,
  spawnerAvailable,
  spawnerEnded,
  spawnWithLease,
} from './command-spawner.js';
import { ToolError } from './errors.js';
import { OutputCapture } from './output-capture.js';
import { killProcessTree, killRunProcesses, processStartTicks } from './process-tree.js';
import { buildBwrapArgs, buildCommandEnv, type SandboxUser, ulimitValues } from './sandbox.js';

/**
 * How a prepared sandbox waits for its command, the tail of a POSIX `sh`
 * script with `$end` (a nonce) and `$bash` set: it reads the command on stdin
 * as lines, up to a line that is exactly `$end`, and execs
 * `bash -c <command>` with stdin from /dev/null, exactly as an unprepared
 * command starts. Without the end line (the worker closed stdin, or died
 * while writing) nothing runs: exit code 125.
 */
const AWAIT_COMMAND = [
  "command= separator= newline='",
  "'",
  'while IFS= read -r line; do',
  '  [ "$line" = "$end" ] && exec "$bash" -c "$command" </dev/null',
  '  command=$command$separator$line separator=$newline',
  'done',
  'exit 125',
];

/**
 * The launcher, a POSIX `sh` script (dash starts in a fraction of bash's time:
 * it is on every command's path), run as
 * `sh -c LAUNCHER <name> <fsize blocks> <cpu s> <nofile> <kill procs> <end> <n> <n cgroup.procs files> <argv…>`
 * with the lease pipe (see `command-lease.ts`) on fd 3:
 * start the watchdog, enter the cgroup(s), set the rlimits (`ulimit`, no
 * `prlimit` exec), and exec the command without fd 3. Exit code 125 means the
 * cgroup could not be entered or the limits set. With an `<end>` (a prepared
 * sandbox without bubblewrap, whose `<name>` is then `tether-await`), `argv`
 * is bash alone: the launcher closes fd 3 and waits for the command itself
 * ({@link AWAIT_COMMAND}), one exec fewer than an {@link AWAIT} script
 * would cost. Under bubblewrap the waiting is done inside the sandbox, by
 * {@link AWAIT}.
 *
 * The watchdog is a subshell of the launcher (a fork, no exec), in its process
 * group but outside the command's cgroup, forked before anything of the
 * command runs. It blocks reading the lease pipe, which ends only when the
 * worker's keeper is gone (the worker died, at any moment of the launch
 * included, or sent no heartbeat for the lease). It then kills the launcher
 * (or the sandbox it became), every process of the cgroup whose `cgroup.procs`
 * is `<kill procs>` (empty: none) until none is left, and last the process
 * group, itself included. A process of the command is either the launcher or
 * was started after the launcher entered the cgroup, so once the launcher is
 * dead the cgroup holds every other one.
 */
export const LAUNCHER = [
  'fsize=$1 cpu=$2 nofile=$3 procs=$4 end=$5 n=$6; shift 6',
  '{',
  '  while read -r _; do :; done',
  '  kill -KILL $$',
  '  i=0',
  '  while [ -n "$procs" ] && [ "$i" -lt 100 ]; do',
  '    left=',
  '    while read -r p; do kill -KILL "$p"; left=1; done <"$procs"',
  '    [ -z "$left" ] && break',
  '    i=$((i+1))',
  '  done',
  '  kill -KILL -- -$$',
  '} <&3 >/dev/null 2>&1 &',
  'while [ "$n" -gt 0 ]; do',
  '  echo $$ 2>/dev/null >"$1" || { echo "tether: the command could not enter its cgroup" >&2; exit 125; }',
  '  n=$((n-1)); shift',
  'done',
  'ulimit -f "$fsize" && ulimit -t "$cpu" && ulimit -n "$nofile" || { echo "tether: the limits could not be set" >&2; exit 125; }',
  '[ -z "$end" ] && exec "$@" 3<&-',
  'exec 3<&-',
  'bash=$1',
  ...AWAIT_COMMAND,
].join('\n');

/** After the command is gone, how long its pipes may stay open (held by an escaped process) before they are closed. */
const PIPE_GRACE_MS = 2000;

/** How a command is run, everything but the command itself and its call. */
export interface CommandSandbox {
  /** Names the command's processes (see `process-tree.ts`); it should start with the run id and a dot. */
  tag: string;
  /** Real path of the workspace: the working directory (and, under bwrap, the only writable host directory). */
  workspace: string;
  sandbox: 'bwrap' | 'none';
  /** Real path of the directory of every run's workspace, hidden under bwrap but for `workspace`. */
  workspaceRoot?: string | undefined;
  /** Absolute paths of the programs; `bwrap` is needed only for the bwrap sandbox. */
  programs: { bash: string; sh: string; bwrap?: string | undefined };
  /** Under bwrap: host directories the command sees read-only (targets under `/run`). */
  readOnlyBinds?: readonly { source: string; target: string; hide?: string | undefined }[] | undefined;
  /** Under bwrap: give the command a user namespace of its own (default true). */
  userNamespace?: boolean | undefined;
  /** The host user the command runs as (a root worker's commands run unprivileged); default: the worker's. */
  user?: SandboxUser | undefined;
  /** The command's cgroup, already created with its limits; none: rlimits only. */
  cgroup?: CommandCgroup | undefined;
  /** The watchdog kills the command when the worker dies or sends its keeper no heartbeat for this long. */
  leaseMs: number;
  allowNetwork: boolean;
  /** Variables set over the allow-list. */
  env: Readonly<Record<string, string>>;
  tmpBytes: number;
  fileSizeBytes: number;
  cpuSeconds: number;
  openFiles: number;
}

/** One call: the command, its time limit, its cancel and what becomes of its output. */
export interface CommandCall {
  command: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Bytes of output kept for the result. */
  outputBytes: number;
  /** Bytes of output passed to `onOutput` before live output stops. */
  streamBytes: number;
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void;
}

/** Everything one command run needs. */
export interface RunCommandOptions extends CommandSandbox, CommandCall {}

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
  /** Which cgroup limit the kernel enforced, when the command had a cgroup. */
  limits?: CgroupVerdict;
}

/**
 * The program a prepared sandbox runs inside bubblewrap while it waits, a
 * POSIX `sh` script run as `sh -c AWAIT tether-await <end> <bash>`: see
 * {@link AWAIT_COMMAND}.
 */
export const AWAIT = ['end=$1 bash=$2', ...AWAIT_COMMAND].join('\n');

/** A command whose launcher runs (its cgroup entered, its watchdog armed); `end` is set while it waits for the command. */
interface Launched {
  child: ChildProcessByStdio<Writable | null, Readable, Readable> | SpawnedProcess;
  tag: string;
  end?: string;
  /** When the launcher started (see `process-tree.ts`): none of the command's processes started earlier. */
  startTicks: number | undefined;
  /** The error of a spawn that failed (emitted once, after the spawn returned). */
  failed: Promise<Error>;
}

/**
 * Spawns the launcher of `command`, of a sandbox that waits for its command on
 * stdin (undefined), or of a program's own `argv` (a long-lived program whose
 * stdin is piped, see {@link SandboxedProcess}).
 */
async function launch(
  options: CommandSandbox,
  command: string | { argv: string[] } | undefined,
): Promise<Launched> {
  const tag = `${options.tag}.${randomBytes(6).toString('hex')}`;
  const end = command === undefined ? `tether-end-${randomBytes(12).toString('hex')}` : undefined;
  const env = buildCommandEnv(options.workspace, options.env, tag);
  // Without bubblewrap, a prepared sandbox's launcher waits for the command itself (see LAUNCHER).
  const launcherWaits = end !== undefined && options.sandbox !== 'bwrap';
  const inner =
    typeof command === 'object'
      ? command.argv
      : end === undefined
        ? [options.programs.bash, '-c', command as string]
        : launcherWaits
          ? [options.programs.bash]
          : [options.programs.sh, '-c', AWAIT, 'tether-await', end, options.programs.bash];
  let argv: string[];
  if (options.sandbox === 'bwrap') {
    if (options.programs.bwrap === undefined) {
      throw new ToolError('ERR_TOOL_SANDBOX_UNAVAILABLE', 'bwrap is not installed on this host.');
    }
    argv = [
      options.programs.bwrap,
      ...buildBwrapArgs({
        workspace: options.workspace,
        workspaceRoot: options.workspaceRoot,
        allowNetwork: options.allowNetwork,
        tmpBytes: options.tmpBytes,
        userNamespace: options.userNamespace ?? true,
        readOnlyBinds: options.readOnlyBinds,
      }),
      '--',
      ...inner,
    ];
  } else {
    argv = inner;
  }
  const procsFiles = options.cgroup?.procsFiles ?? [];
  const limits = ulimitValues({
    fileSizeBytes: options.fileSizeBytes,
    cpuSeconds: options.cpuSeconds,
    openFiles: options.openFiles,
  });
  const args = [
    '-c',
    LAUNCHER,
    launcherWaits ? 'tether-await' : 'tether-launch',
    ...limits,
    procsFiles.at(-1) ?? '',
    launcherWaits ? end : '',
    String(procsFiles.length),
    ...procsFiles,
    ...argv,
  ];

  let lease: number;
  try {
    lease = await commandLease(options.programs.bash, options.leaseMs);
  } catch (error) {
    throw spawnFailure(error);
  }
  const request: SpawnRequest = {
    file: options.programs.sh,
    args,
    cwd: options.workspace,
    env,
    stdin: typeof command === 'string' ? 'ignore' : 'pipe',
    user: options.user,
  };
  if (spawnerAvailable()) {
    const started = await spawnWithLease(lease, request);
    if (started instanceof SpawnedProcess) {
      const failed = new Promise<Error>(() => undefined);
      return end === undefined
        ? { child: started, tag, startTicks: started.startTicks, failed }
        : { child: started, tag, end, startTicks: started.startTicks, failed };
    }
    if (!spawnerEnded(started)) {
      // Not started, or started and lost with its spawner (then killed, its group and its cgroup):
      // either way the call fails, and nothing of it is started again here.
      await options.cgroup?.kill().catch(() => undefined);
      throw spawnFailure(started);
    }
    // The spawner ended before it let the launcher run: nothing of it runs, so the worker spawns it.
    try {
      lease = await commandLease(options.programs.bash, options.leaseMs);
    } catch (error) {
      throw spawnFailure(error);
    }
  }
  // From here to the spawn nothing awaits: the lease's descriptor stays open until then.
  try {
    const child = spawn(request.file, request.args, {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: [request.stdin, 'pipe', 'pipe', lease],
      ...(request.user === undefined ? {} : { uid: request.user.uid, gid: request.user.gid }),
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>; // the typings know no fourth stdio entry
    const failed = new Promise<Error>((resolve) => child.on('error', resolve));
    // Read before anything returns to the event loop, which reaps the launcher once it exits.
    const startTicks = child.pid === undefined ? undefined : processStartTicks(child.pid);
    return end === undefined ? { child, tag, startTicks, failed } : { child, tag, end, startTicks, failed };
  } catch (error) {
    throw spawnFailure(error);
  }
}

/**
 * Runs `options.command` and resolves when it is over and all its processes
 * are dead.
 * @throws ToolError `ERR_TOOL_SPAWN_FAILED` when the process cannot be started
 */
export async function runCommand(options: RunCommandOptions): Promise<RunCommandResult> {
  return supervise(await launch(options, options.command), options, options);
}

/**
 * A sandbox started ahead of its command: the launcher has entered the
 * cgroup, armed the watchdog and exec'd bubblewrap, whose {@link AWAIT} waits
 * for the command on stdin (without bubblewrap, the launcher waits itself). {@link PreparedCommand.run} sends it, and
 * from there the command runs and is supervised, killed and reported exactly
 * as by {@link runCommand}; what the sandbox took to build is off the call's
 * path. A prepared sandbox runs one command at most.
 */
export class PreparedCommand {
  readonly #options: CommandSandbox;
  readonly #launched: Launched;
  #used = false;

  private constructor(options: CommandSandbox, launched: Launched) {
    this.#options = options;
    this.#launched = launched;
    // Nothing is written before the command is sent but a failure to start, which a later run reports.
    launched.child.stdin?.on('error', () => undefined);
  }

  /**
   * Starts a sandbox for a command to come.
   * @throws ToolError `ERR_TOOL_SPAWN_FAILED` when the process cannot be started
   */
  static async prepare(options: CommandSandbox): Promise<PreparedCommand> {
    return new PreparedCommand(options, await launch(options, undefined));
  }

  /** The sandbox it was prepared with. */
  get options(): CommandSandbox {
    return this.#options;
  }

  /** Whether it can still take its command: not used, and still waiting (it has not exited). */
  get usable(): boolean {
    const { child } = this.#launched;
    return !this.#used && child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /**
   * Sends `call.command` and supervises it as {@link runCommand} does. Check
   * {@link usable} first, in the same tick.
   * @throws Error when it was used or has exited
   */
  run(call: CommandCall): Promise<RunCommandResult> {
    if (!this.usable) throw new Error('this prepared sandbox cannot take a command');
    this.#used = true;
    return supervise(this.#launched, this.#options, call, call.command);
  }

  /** Kills the sandbox unused, every process of it, and resolves once they are dead. */
  async discard(): Promise<void> {
    if (this.#used) return;
    this.#used = true;
    const { child } = this.#launched;
    if (child.pid !== undefined && (child.exitCode !== null || child.signalCode !== null)) {
      // Ended already (its watchdog, or a failure to start): its pid and group may belong to another
      // process by now, so only its cgroup is killed.
      child.stdin?.destroy();
      child.stdout.destroy();
      child.stderr.destroy();
      await this.#options.cgroup?.kill();
      return;
    }
    const cancelled = new AbortController();
    cancelled.abort();
    await supervise(this.#launched, this.#options, {
      command: '',
      timeoutMs: PIPE_GRACE_MS,
      signal: cancelled.signal,
      outputBytes: 0,
      streamBytes: 0,
    }).catch(() => undefined); // a sandbox that never started has nothing to kill
  }
}

/**
 * A long-lived program started in a command's sandbox, exactly as a command
 * is (its launcher, watchdog, cgroup and rlimits, under bubblewrap or not),
 * with its stdin, stdout and stderr piped to the worker: an MCP stdio server.
 * It is supervised as a command is from its start, so when it exits, is
 * stopped ({@link stop}) or its run is cancelled, everything it started is
 * killed; its watchdog kills it when the worker dies.
 */
export class SandboxedProcess {
  readonly #launched: Launched;
  readonly #stop = new AbortController();
  /** Resolves once the program and everything it started are dead. */
  readonly ended: Promise<RunCommandResult>;

  private constructor(options: CommandSandbox, launched: Launched, signal: AbortSignal | undefined) {
    this.#launched = launched;
    launched.child.stdin?.on('error', () => undefined);
    this.ended = supervise(launched, options, {
      command: '',
      // As good as never: it runs until stopped.
      timeoutMs: 2 ** 31 - 1,
      signal: signal ? AbortSignal.any([signal, this.#stop.signal]) : this.#stop.signal,
      outputBytes: 0,
      streamBytes: 0,
    });
    this.ended.catch(() => undefined);
  }

  /**
   * Starts `argv` (the program and its arguments; a name is looked up on the
   * sandbox's `PATH`) in the sandbox `options` describes; `signal` stops it too.
   * @throws ToolError `ERR_TOOL_SPAWN_FAILED` when the process cannot be started
   */
  static async start(
    options: CommandSandbox,
    argv: string[],
    signal?: AbortSignal,
  ): Promise<SandboxedProcess> {
    const launched = await launch(options, { argv });
    if (launched.child.pid === undefined) throw spawnFailure(await launched.failed);
    return new SandboxedProcess(options, launched, signal);
  }

  get stdin(): Writable {
    return this.#launched.child.stdin as Writable;
  }

  get stdout(): Readable {
    return this.#launched.child.stdout;
  }

  get stderr(): Readable {
    return this.#launched.child.stderr;
  }

  /** Kills the program and every process it started (its cgroup, its group), and resolves once they are dead. */
  async stop(): Promise<void> {
    this.#launched.child.stdin?.destroy();
    this.#stop.abort();
    await this.ended.catch(() => undefined);
  }
}

/**
 * Follows a launched command to its end: output, timeout, cancel, the kill of
 * everything it started, the cgroup's verdict. `send` is the command for a
 * sandbox that waits for it (none: the command is in its argv, or the sandbox
 * is being discarded).
 */
function supervise(
  launched: Launched,
  options: CommandSandbox,
  call: CommandCall,
  send?: string,
): Promise<RunCommandResult> {
  const { child } = launched;
  if (child.pid === undefined) {
    return launched.failed.then((error) => {
      throw spawnFailure(error);
    });
  }
  const started = performance.now();
  return new Promise<RunCommandResult>((resolve) => {
    const output = new CommandOutput(call);
    let outcome: RunCommandResult['outcome'] = 'exited';
    let exited = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let settled = false;
    let guard: NodeJS.Timeout | undefined;
    const kills: Promise<number[]>[] = [];

    const finish = async (): Promise<void> => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(guard);
      call.signal.removeEventListener('abort', onAbort);
      output.end();
      const [survivors, limits] = await Promise.all([
        Promise.all(kills).then((all) => all.at(-1) ?? []),
        options.cgroup?.verdict().catch(() => undefined),
      ]);
      resolve({
        outcome,
        exitCode,
        exitSignal,
        output: output.capture.text(),
        totalBytes: output.capture.totalBytes,
        omittedBytes: output.capture.omittedBytes,
        streamTruncated: output.truncated,
        durationMs: Math.round(performance.now() - started),
        survivors,
        ...(limits === undefined ? {} : { limits }),
      });
    };

    /** Kills everything the command started; once the command is gone, gives its pipes a grace period. */
    const killAll = (reason?: 'timeout' | 'cancelled'): void => {
      if (settled || child.pid === undefined) return;
      if (reason !== undefined && !exited && outcome === 'exited') outcome = reason;
      kills.push(killEverything(launched, options, child.pid, () => !exited));
      guard ??= setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        void finish();
      }, PIPE_GRACE_MS);
    };

    const onAbort = (): void => killAll('cancelled');
    const timer = setTimeout(() => killAll('timeout'), call.timeoutMs);

    child.stdout?.on('data', (chunk: Buffer) => output.push('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => output.push('stderr', chunk));
    child.on('exit', (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      clearTimeout(timer);
      // Background jobs and detached grandchildren do not outlive the call.
      killAll();
    });
    child.on('close', () => void finish());

    if (call.signal.aborted) onAbort();
    else call.signal.addEventListener('abort', onAbort, { once: true });
    if (launched.end !== undefined) {
      // The sandbox waits for its command: the lines, then the end line (see AWAIT_COMMAND); nothing if discarded.
      child.stdin?.end(send === undefined || call.signal.aborted ? '' : `${send}\n${launched.end}\n`);
    }
  });
}

/**
 * A command's output: all of it captured for the result (cut in the middle past `outputBytes`),
 * and streamed live to `onOutput` until `streamBytes`.
 */
class CommandOutput {
  readonly capture: OutputCapture;
  /** Whether live output stopped at `streamBytes`. */
  truncated = false;
  readonly #call: CommandCall;
  readonly #decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  #streamed = 0;

  constructor(call: CommandCall) {
    this.#call = call;
    this.capture = new OutputCapture(call.outputBytes);
  }

  /** A chunk of the command's output. */
  push(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    const call = this.#call;
    const decoder = this.#decoders[stream];
    this.capture.push(chunk);
    if (call.onOutput === undefined || this.truncated) return;
    const room = call.streamBytes - this.#streamed;
    if (chunk.length <= room) {
      this.#streamed += chunk.length;
      this.#emit(stream, decoder.write(chunk));
      return;
    }
    this.truncated = true;
    this.#streamed += room;
    this.#emit(stream, decoder.write(chunk.subarray(0, room)) + decoder.end());
    this.#emit(
      stream,
      `\n[live output stopped after ${call.streamBytes} bytes; the command keeps running, and its result keeps the start and the end of the output]\n`,
    );
  }

  /** The output has ended: what the decoders held back is streamed (unless live output stopped). */
  end(): void {
    if (this.truncated) return;
    this.#emit('stdout', this.#decoders.stdout.end());
    this.#emit('stderr', this.#decoders.stderr.end());
  }

  #emit(stream: 'stdout' | 'stderr', text: string): void {
    if (text !== '' && this.#call.onOutput !== undefined) this.#call.onOutput(stream, text);
  }
}

/**
 * Kills everything a command started: its cgroup, and its launcher's process group or tree.
 * Resolves to the processes that could not be killed.
 */
function killEverything(
  launched: Launched,
  options: CommandSandbox,
  pid: number,
  rootAlive: () => boolean,
): Promise<number[]> {
  // Under bwrap, a command's cgroup holds every process it has (none can leave it: the cgroup
  // files are not writable from the sandbox), so killing the cgroup and the launcher's process
  // group is complete; elsewhere /proc is scanned as well.
  const tree =
    options.cgroup !== undefined && options.sandbox === 'bwrap'
      ? Promise.resolve(killProcessGroup(pid))
      : killProcessTree({ pid, tag: launched.tag, rootAlive, startTicks: launched.startTicks });
  const group = options.cgroup?.kill() ?? Promise.resolve([]);
  return Promise.all([group, tree]).then(([inGroup, inTree]) => [...new Set([...inGroup, ...inTree])]);
}

/** SIGKILL to a process group; the group being gone already is fine. */
function killProcessGroup(pgid: number): number[] {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Already gone.
  }
  return [];
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

/**
 * Kills every command process of `runId` left on this host by an earlier
 * owner of the run (its cgroups, and processes carrying its tag), and
 * resolves once they are dead. A new owner calls it before it runs a call
 * that was in flight, so two executions of one call never live at once.
 * @returns how many cgroups and processes were found
 */
export async function killRunLeftovers(runId: string): Promise<{ cgroups: number; processes: number }> {
  const cgroups = await killRunCgroups(await cgroupSupport(), runId);
  const processes = await killRunProcesses(runId);
  return { cgroups, processes };
}
