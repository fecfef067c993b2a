/**
 * The lease that keeps a worker's commands alive: one small keeper process
 * per worker process (and lease length), shared by all its commands.
 *
 * The keeper is a bash script started once, in a session of its own. It makes
 * a pipe of its own (both ends on its fd 3, so it is the pipe's only writer,
 * and it never writes), says `ready`, then reads the worker's heartbeats, four
 * per lease, on its stdin (`read -t`). The worker opens the pipe's read end
 * through `/proc/<keeper>/fd/3`, a blocking descriptor that it never reads,
 * and hands it to every command's launcher, whose watchdog blocks reading it
 * (see `run-command.ts`). A read on a pipe returns end of file only once no
 * process holds a write end, that is, once the keeper is gone. The keeper ends
 * when the worker dies (end of file on its stdin, at any moment) or stops
 * answering for the lease (a stopped or frozen worker), and when it is killed:
 * in each case every command's watchdog wakes at once and kills its command.
 * No command outlives the worker that owns it.
 *
 * A keeper that ended is replaced at the next command; the commands that it
 * leased have died with it.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { forgetSpawner } from './command-spawner.js';
import { SANDBOX_PATH } from './sandbox.js';

/** The keeper, run as `bash -c KEEPER tether-lease <lease s>`. */
export const KEEPER = [
  'exec 3<> <(:) || exit 1',
  'echo ready; exec >&-',
  'while IFS= read -r -t "$1" _; do :; done',
].join('\n');

/** How long a keeper may take to say it is ready. */
const READY_TIMEOUT_MS = 10_000;

interface Keeper {
  child: ChildProcessByStdio<Writable, Readable, null>;
  /** The read end of the lease pipe, once the keeper is ready. */
  ready: Promise<number>;
}

const keepers = new Map<number, Keeper>();

function startKeeper(bash: string, leaseMs: number): Keeper {
  const child = spawn(bash, ['-c', KEEPER, 'tether-lease', (leaseMs / 1000).toFixed(3)], {
    cwd: '/',
    env: { PATH: SANDBOX_PATH },
    detached: true,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  // A write to a keeper already gone fails quietly; the next command starts a new one.
  child.stdin.on('error', () => undefined);
  const heartbeat = setInterval(() => child.stdin.write('\n'), Math.max(10, Math.floor(leaseMs / 4)));
  let fd: number | undefined;
  const ready = new Promise<number>((resolve, reject) => {
    let said = '';
    const timer = setTimeout(
      () => fail(new Error('the lease keeper did not start in time')),
      READY_TIMEOUT_MS,
    );
    const fail = (error: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      said += chunk;
      if (said !== 'ready\n' || child.pid === undefined) return;
      clearTimeout(timer);
      try {
        fd = openSync(`/proc/${child.pid}/fd/3`, 'r');
        resolve(fd);
      } catch (error) {
        fail(error instanceof Error ? error : new Error(String(error)));
      }
    });
    child.on('exit', () => fail(new Error('the lease keeper ended before it was ready')));
    child.on('error', fail);
  });
  // Nobody waits on a keeper that was never used.
  ready.catch(() => undefined);
  const keeper: Keeper = { child, ready };
  const forget = (): void => {
    clearInterval(heartbeat);
    if (fd !== undefined) {
      forgetSpawner(fd);
      closeSync(fd);
    }
    fd = undefined;
    if (keepers.get(leaseMs) === keeper) keepers.delete(leaseMs);
  };
  child.on('exit', forget);
  child.on('error', forget);
  // The keeper must not hold the worker's event loop open.
  heartbeat.unref();
  child.unref();
  (child.stdin as Writable as Socket).unref();
  (child.stdout as Readable as Socket).unref();
  return keeper;
}

/**
 * The read end of the lease pipe of this process's keeper for `leaseMs`
 * (started at the first call, and again after it ended), to pass to a
 * command's launcher as a file descriptor. It reaches end of file when the
 * worker dies or sends no heartbeat for `leaseMs`.
 * @throws Error when the keeper cannot be started
 */
export function commandLease(bash: string, leaseMs: number): Promise<number> {
  let keeper = keepers.get(leaseMs);
  if (keeper === undefined) {
    keeper = startKeeper(bash, leaseMs);
    keepers.set(leaseMs, keeper);
  }
  return keeper.ready;
}

/** The keepers' pids (tests). */
export function leaseKeeperPids(): number[] {
  return [...keepers.values()].flatMap((keeper) =>
    keeper.child.pid === undefined ? [] : [keeper.child.pid],
  );
}
