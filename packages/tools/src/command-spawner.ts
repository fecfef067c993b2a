/**
 * Starts the launchers of a worker's commands from a small long-lived process,
 * so that starting one never blocks the worker's event loop.
 *
 * Node's `spawn()` forks the whole worker and waits for the child's exec with
 * the event loop blocked (7 ms on a quiet 2-core host, 11 to 38 ms on a busy
 * one, whatever the heap): every run on the worker stalls for it, and a
 * back-to-back bash call pays it on its path (the next sandbox is prepared
 * while the call's command runs). The spawner is a Perl script (perl-base is
 * part of every Debian and Ubuntu system; without a perl the worker spawns as
 * before), one per lease keeper (see `command-lease.ts`), with the lease's read
 * end on its fd 3, which every launcher inherits. On request it makes the
 * launcher's pipes, forks, and in the child starts a new session, puts the
 * pipes on fds 0 to 2, enters the working directory, drops to the command's
 * user (groups, gid, uid), replaces the environment and execs; an exec that
 * fails reports its errno through a close-on-exec pipe. It answers the
 * launcher's pid and start time (read before the launcher can be reaped), and
 * the worker opens the pipes' other ends through `/proc/<spawner>/fd`, after
 * which the spawner closes its own. It reaps every launcher and reports its
 * wait status.
 *
 * The spawner holds nothing a command needs once started: it exits when the
 * worker does (end of file on its stdin), and the lease ends every command
 * then, as before. A spawner that dies while commands run leaves them without
 * their exit status: the worker kills them (their process groups and
 * cgroups) and reports them killed; the next command starts a new spawner.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, constants as fsConstants, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { findExecutable } from './sandbox.js';

const PERL_CANDIDATES = ['/usr/bin/perl', '/bin/perl'];

/** The perl the spawners run (null: none, or it does not work here); looked up at the first command. */
let perlPath: string | null | undefined;

/** How much of a spawner's stderr is kept, to say why it failed. */
const STDERR_KEPT = 2_000;

/**
 * Why the spawner was turned off for the rest of the process's life: it
 * exited with an error before it answered anything (a perl without its
 * POSIX module, say), and every launcher is spawned by the worker itself
 * from then on, each start blocking its event loop.
 */
export interface SpawnerFailure {
  /** The perl it ran. */
  perl: string;
  /** Its exit code, and what it printed on stderr (the start of it), in a sentence. */
  cause: string;
}

const failureListeners = new Set<(failure: SpawnerFailure) => void>();

/**
 * Calls `listener` when the spawner is turned off by a failure (once per
 * process, but after {@link useCommandSpawner} turned it back on). Libraries
 * do not log: the worker does. Returns the function that removes it.
 */
export function onSpawnerFailure(listener: (failure: SpawnerFailure) => void): () => void {
  failureListeners.add(listener);
  return () => failureListeners.delete(listener);
}

/**
 * The spawner, run as `perl -e SPAWNER` with the lease on fd 3. A request on
 * stdin is `<bytes>\n` and that many bytes: NUL-separated fields, `R`, id,
 * stdin (`pipe` or `null`), uid and gid (both empty: the spawner's own), cwd,
 * the number of environment entries, the entries (`NAME=value`), and the argv
 * (its first entry the program's path); or `C`, id: close the spawner's ends
 * of that launcher's pipes. Each answer is a line: `P <id> <pid>` (forked: the
 * child waits for the spawner's go, given once this line is out, before it
 * execs; a spawner gone before that ends the child unstarted), then `S <id>
 * <pid> <start ticks> <stdin fd or -> <stdout fd> <stderr fd>` (started) or
 * `F <id> <errno>` (not started), and later `X <id> <wait status>`.
 */
export const SPAWNER = String.raw`
use strict; use warnings; use POSIX ();
$| = 1;
my (%kids, %held);
my $chld = POSIX::SigSet->new(POSIX::SIGCHLD());
$SIG{CHLD} = sub {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $id = delete $kids{$pid};
    print "X $id $?\n" if defined $id;
  }
};
sub launch {
  my ($id, $stdin, $uid, $gid, $cwd, $nenv, @rest) = @_;
  my @env = splice(@rest, 0, $nenv);
  my ($in_r, $in_w, $out_r, $out_w, $err_r, $err_w, $st_r, $st_w, $go_r, $go_w);
  unless (($stdin ne 'pipe' || pipe($in_r, $in_w)) && pipe($out_r, $out_w) && pipe($err_r, $err_w) && pipe($st_r, $st_w) && pipe($go_r, $go_w)) {
    print "F $id ", 0 + $!, "\n";
    return;
  }
  POSIX::sigprocmask(POSIX::SIG_BLOCK(), $chld);
  my $pid = fork;
  if (defined $pid && $pid == 0) {
    my $fail = sub { syswrite $st_w, pack('N', (0 + $!) || POSIX::EPERM()); POSIX::_exit(127) };
    close $go_w;
    POSIX::sigprocmask(POSIX::SIG_SETMASK(), POSIX::SigSet->new());
    $SIG{CHLD} = 'DEFAULT';
    defined POSIX::setsid() or $fail->();
    if ($stdin eq 'pipe') { defined POSIX::dup2(fileno $in_r, 0) or $fail->() }
    else { open(STDIN, '<', '/dev/null') or $fail->() }
    defined POSIX::dup2(fileno $out_w, 1) or $fail->();
    defined POSIX::dup2(fileno $err_w, 2) or $fail->();
    chdir $cwd or $fail->();
    if ($uid ne '') {
      $) = "$gid $gid";
      $) eq "$gid $gid" or $fail->();
      defined POSIX::setgid($gid) or $fail->();
      defined POSIX::setuid($uid) or $fail->();
      $< == $uid && $> == $uid or $fail->();
    }
    %ENV = map { split /=/, $_, 2 } @env;
    # Not before the worker knows the pid: a spawner gone before it says go leaves nothing running.
    my $go;
    do { $go = sysread($go_r, my $byte, 1) } while (!defined $go && $!{EINTR});
    POSIX::_exit(125) unless $go;
    exec { $rest[0] } @rest;
    $fail->();
  }
  my $errno = 0 + $!;
  close $st_w; close $out_w; close $err_w; close $go_r;
  if (!defined $pid) {
    POSIX::sigprocmask(POSIX::SIG_UNBLOCK(), $chld);
    print "F $id $errno\n";
    return;
  }
  print "P $id $pid\n";
  syswrite $go_w, 'g';
  close $go_w;
  my $got;
  do { $got = sysread($st_r, my $e, 4); $errno = unpack('N', $e) if $got } while (!defined $got && $!{EINTR});
  close $st_r;
  if ($got) {
    waitpid($pid, 0);
    POSIX::sigprocmask(POSIX::SIG_UNBLOCK(), $chld);
    print "F $id $errno\n";
    return;
  }
  $kids{$pid} = $id;
  my $ticks = '-';
  if (open(my $stat, '<', "/proc/$pid/stat")) {
    my $line = <$stat> // '';
    my @fields = split / /, substr($line, rindex($line, ')') + 2);
    $ticks = $fields[19] // '-';
  }
  $held{$id} = [$in_r, $in_w, $out_r, $err_r];
  print "S $id $pid $ticks ", ($in_w ? fileno $in_w : '-'), ' ', fileno $out_r, ' ', fileno $err_r, "\n";
  POSIX::sigprocmask(POSIX::SIG_UNBLOCK(), $chld);
}
my $buf = '';
for (;;) {
  my $n = sysread(STDIN, $buf, 65536, length $buf);
  if (!defined $n) { next if $!{EINTR}; last }
  last if $n == 0;
  for (;;) {
    my $nl = index($buf, "\n");
    last if $nl < 0;
    my $len = substr($buf, 0, $nl);
    last if length($buf) < $nl + 1 + $len;
    my @f = split /\0/, substr($buf, $nl + 1, $len), -1;
    substr($buf, 0, $nl + 1 + $len, '');
    my $op = shift @f;
    if ($op eq 'R') { launch(@f) } elsif ($op eq 'C') { delete $held{$f[0]} }
  }
}
`;

/** How a launcher is started: as `spawn()` would, with a new session and pipes on fds 1 and 2. */
export interface SpawnRequest {
  file: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
  /** `pipe`: its stdin is a pipe from the worker; `ignore`: `/dev/null`. */
  stdin: 'pipe' | 'ignore';
  user?: { uid: number; gid: number } | undefined;
}

/**
 * A launcher the spawner started, shaped as the part of a `ChildProcess`
 * that `run-command.ts` uses: `exit`, then `close` once stdout and stderr
 * closed too.
 */
export class SpawnedProcess extends EventEmitter {
  readonly pid: number;
  /** When it started, read before it could be reaped (see `process-tree.ts`). */
  readonly startTicks: number | undefined;
  readonly stdin: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  #open = 2;
  #exiting = false;
  #exited = false;

  constructor(
    pid: number,
    startTicks: number | undefined,
    fds: { stdin?: number; stdout: number; stderr: number },
  ) {
    super();
    this.pid = pid;
    this.startTicks = startTicks;
    this.stdin =
      fds.stdin === undefined ? null : new Socket({ fd: fds.stdin, readable: false, writable: true });
    this.stdout = new Socket({ fd: fds.stdout, readable: true, writable: false });
    this.stderr = new Socket({ fd: fds.stderr, readable: true, writable: false });
    for (const stream of [this.stdout, this.stderr]) {
      stream.once('close', () => {
        this.#open -= 1;
        this.#closeIfDone();
      });
    }
  }

  /** Its wait status, from the spawner. */
  exited(status: number): void {
    const signal = status & 0x7f;
    if (signal === 0) this.#report(status >> 8, null);
    else this.#report(null, signalName(signal));
  }

  /** The spawner is gone, and its wait status with it: killed, as the worker kills it. */
  orphaned(): void {
    if (this.#exiting) return;
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
    this.#report(null, 'SIGKILL');
  }

  /**
   * Sets its end and emits `exit` from a later turn of the event loop, as a `ChildProcess` does:
   * its exit may come in the same read as its start, before anyone listens.
   */
  #report(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#exiting) return;
    this.#exiting = true;
    setImmediate(() => {
      this.exitCode = code;
      this.signalCode = signal;
      this.#exited = true;
      this.emit('exit', code, signal);
      this.#closeIfDone();
    });
  }

  #closeIfDone(): void {
    if (this.#exited && this.#open === 0) {
      this.#open = -1;
      this.emit('close', this.exitCode, this.signalCode);
    }
  }
}

function signalName(number: number): NodeJS.Signals {
  for (const [name, value] of Object.entries(osConstants.signals)) {
    if (value === number) return name as NodeJS.Signals;
  }
  return 'SIGKILL';
}

/** An errno from the spawner as the error `spawn()` would emit. */
function errnoError(errno: number, file: string): NodeJS.ErrnoException {
  const entry = Object.entries(osConstants.errno).find(([, value]) => value === errno);
  const code = entry?.[0] ?? 'EUNKNOWN';
  const error: NodeJS.ErrnoException = new Error(`spawn ${file} ${code}`);
  error.code = code;
  error.errno = -errno;
  error.syscall = `spawn ${file}`;
  return error;
}

/** The spawner ended with the request unanswered: the launcher may or may not have started. */
class SpawnerEndedError extends Error {}

/** Whether a start failed because its spawner ended (the worker then spawns the launcher itself). */
export function spawnerEnded(error: Error): boolean {
  return error instanceof SpawnerEndedError;
}

interface Pending {
  file: string;
  /** Once the spawner forked it (`P`): the child may run from there. */
  pid?: number;
  resolve: (started: SpawnedProcess | Error) => void;
}

/** One spawner process and what it started. */
class Spawner {
  readonly #child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly #pending = new Map<string, Pending>();
  readonly #live = new Map<string, SpawnedProcess>();
  #next = 0;
  #ended = false;
  #answered = false;
  #stopped = false;
  readonly #perl: string;
  /** The start of what it printed on stderr (perl's own messages: nothing, while it works). */
  #stderr = '';

  constructor(perl: string, lease: number) {
    this.#perl = perl;
    this.#child = spawn(perl, ['-e', SPAWNER], {
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', lease],
    }) as unknown as ChildProcessByStdio<Writable, Readable, Readable>; // the typings know no fourth stdio entry
    this.#child.stdin.on('error', () => undefined);
    // A spawner the worker cannot talk to is stopped: what it forked and did not start ends unstarted.
    this.#child.on('error', () => {
      this.#child.kill('SIGKILL');
      this.#end(undefined);
    });
    // Once its stdout and stderr are read to the end too: every launcher it reported ended is
    // reported so. One that exits with an error having answered nothing does not work here (a perl
    // without its POSIX module): the worker spawns its launchers itself from then on.
    this.#child.on('close', (code) => this.#end(typeof code === 'number' && code !== 0 ? code : undefined));
    // Read to the end (a full pipe would stall the spawner), kept only to say why it failed.
    this.#child.stderr.setEncoding('utf8');
    this.#child.stderr.on('data', (chunk: string) => {
      if (this.#stderr.length < STDERR_KEPT) this.#stderr = (this.#stderr + chunk).slice(0, STDERR_KEPT);
    });
    let partial = '';
    this.#child.stdout.setEncoding('latin1');
    this.#child.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.#answer(line);
    });
    // The spawner must not hold the worker's event loop open, but for a request it has not answered.
    this.#child.unref();
    (this.#child.stdin as Writable as Socket).unref();
    (this.#child.stdout as Readable as Socket).unref();
    (this.#child.stderr as Readable as Socket).unref();
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Starts a launcher; resolves with it, or with the error of a start that failed. */
  start(request: SpawnRequest): Promise<SpawnedProcess | Error> {
    if (this.#ended) return Promise.resolve(new SpawnerEndedError('the command spawner has ended'));
    const names = Object.keys(request.env);
    const fields = [request.file, ...request.args, ...names, ...Object.values(request.env), request.cwd];
    if (
      fields.some((field) => field.includes('\0')) ||
      names.some((name) => name === '' || name.includes('='))
    ) {
      const error: NodeJS.ErrnoException = new TypeError(
        'The arguments, environment and working directory must not contain a NUL byte, nor a variable name an equals sign',
      );
      error.code = 'EINVAL';
      return Promise.resolve(error);
    }
    const id = String(++this.#next);
    const env = Object.entries(request.env).map(([name, value]) => `${name}=${value}`);
    const payload = Buffer.from(
      [
        'R',
        id,
        request.stdin === 'pipe' ? 'pipe' : 'null',
        request.user === undefined ? '' : String(request.user.uid),
        request.user === undefined ? '' : String(request.user.gid),
        request.cwd,
        String(env.length),
        ...env,
        request.file,
        ...request.args,
      ].join('\0'),
    );
    return new Promise((resolve) => {
      this.#pending.set(id, { file: request.file, resolve });
      (this.#child.stdout as Readable as Socket).ref();
      this.#child.stdin.write(`${payload.length}\n`);
      this.#child.stdin.write(payload);
    });
  }

  /** Stops the spawner (its launchers live on, on the lease). */
  stop(): void {
    this.#stopped = true;
    this.#child.stdin.destroy();
  }

  #settle(id: string, started: SpawnedProcess | Error): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    if (this.#pending.size === 0) (this.#child.stdout as Readable as Socket).unref();
    pending.resolve(started);
  }

  #answer(line: string): void {
    this.#answered = true;
    const [kind, id = '', ...rest] = line.split(' ');
    if (kind === 'X') {
      const spawned = this.#live.get(id);
      this.#live.delete(id);
      spawned?.exited(Number(rest[0]));
      return;
    }
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    if (kind === 'P') {
      pending.pid = Number(rest[0]);
      return;
    }
    if (kind === 'F') {
      this.#settle(id, errnoError(Number(rest[0]), pending.file));
      return;
    }
    if (kind !== 'S') return;
    const [pid, ticks, stdinFd, stdoutFd, stderrFd] = rest;
    const own = (fd: string | undefined, flags: number): number =>
      openSync(`/proc/${this.#child.pid}/fd/${fd}`, flags | fsConstants.O_NONBLOCK);
    const opened: number[] = [];
    try {
      const stdin = stdinFd === '-' ? undefined : own(stdinFd, fsConstants.O_WRONLY);
      if (stdin !== undefined) opened.push(stdin);
      const stdout = own(stdoutFd, fsConstants.O_RDONLY);
      opened.push(stdout);
      const stderr = own(stderrFd, fsConstants.O_RDONLY);
      opened.push(stderr);
      const spawned = new SpawnedProcess(
        Number(pid),
        ticks === '-' ? undefined : Number(ticks),
        stdin === undefined ? { stdout, stderr } : { stdin, stdout, stderr },
      );
      this.#live.set(id, spawned);
      this.#settle(id, spawned);
    } catch (error) {
      // A launcher whose pipes the worker could not take (a stdin whose reader is gone already):
      // it cannot be supervised, so it is killed, and the call reports a failed start.
      for (const fd of opened) closeSync(fd);
      try {
        process.kill(-Number(pid), 'SIGKILL');
      } catch {
        // Gone already.
      }
      this.#settle(id, error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.#child.stdin.write(`${2 + id.length}\nC\0${id}`);
    }
  }

  /** `exitCode`: the error it exited with, if it did. */
  #end(exitCode: number | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    if (exitCode !== undefined && !this.#answered && !this.#stopped && perlPath !== null) {
      perlPath = null;
      const printed = this.#stderr.trim().replace(/\s+/g, ' ');
      const failure = {
        perl: this.#perl,
        cause: `the command spawner (${this.#perl}) exited with code ${exitCode} before it answered${printed === '' ? ', printing nothing' : `: ${printed}`}`,
      };
      for (const listener of failureListeners) listener(failure);
    }
    for (const [id, pending] of [...this.#pending]) {
      if (pending.pid === undefined) {
        // Never forked, or forked and never given its go: nothing of it runs.
        this.#settle(id, new SpawnerEndedError('the command spawner ended before it answered'));
        continue;
      }
      // It may have started: killed, and the start fails (not started again elsewhere).
      try {
        process.kill(-pending.pid, 'SIGKILL');
      } catch {
        // Gone already, or never got as far as its own session.
      }
      try {
        process.kill(pending.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
      this.#settle(id, new Error('the command spawner ended while it started the command, which was killed'));
    }
    for (const spawned of this.#live.values()) spawned.orphaned();
    this.#live.clear();
  }
}

const spawners = new Map<number, Spawner>();

/** Whether launchers may start from a spawner (tests and benchmarks of the worker's own spawn turn it off). */
let spawnerEnabled = true;

/**
 * Turns the spawner off (the worker spawns each launcher itself) or back on,
 * with `perl` to run it with instead of the system's (a perl that fails, to
 * see the worker do without); for tests and benchmarks. Turned on, a perl
 * that failed is tried again.
 */
export function useCommandSpawner(enabled: boolean, options: { perl?: string } = {}): void {
  spawnerEnabled = enabled;
  perlPath = options.perl;
}

/** Whether launchers start from a spawner on this host: a perl is installed (and worked). */
export function spawnerAvailable(): boolean {
  if (!spawnerEnabled) return false;
  // Looked up once: null (none, or it failed) stays null, not looked up again.
  if (perlPath === undefined) perlPath = findExecutable(PERL_CANDIDATES) ?? null;
  return perlPath !== null;
}

/**
 * Starts a launcher from the spawner of the lease `lease` (started at its
 * first use, and again after it ended). Resolves with the process, or with
 * the error its start failed with.
 */
export function spawnWithLease(lease: number, request: SpawnRequest): Promise<SpawnedProcess | Error> {
  let spawner = spawners.get(lease);
  if (spawner === undefined || spawner.ended) {
    if (!spawnerAvailable() || perlPath == null) {
      return Promise.resolve(new SpawnerEndedError('no perl to start the command spawner'));
    }
    spawner = new Spawner(perlPath, lease);
    spawners.set(lease, spawner);
  }
  return spawner.start(request);
}

/** The pids of the spawners that run (tests). */
export function commandSpawnerPids(): number[] {
  return [...spawners.values()].flatMap((spawner) =>
    spawner.pid === undefined || spawner.ended ? [] : [spawner.pid],
  );
}

/** Stops the spawner of a lease that ended (see `command-lease.ts`), before its descriptor is closed. */
export function forgetSpawner(lease: number): void {
  spawners.get(lease)?.stop();
  spawners.delete(lease);
}
