/**
 * Finding and killing every process a command started, from `/proc`.
 *
 * A command is spawned as the leader of a new process group, with a random
 * tag in its environment (see {@link PROCESS_TAG_VARIABLE}). Its processes are
 * then found three ways, and each round kills all of them with SIGKILL until
 * a scan finds none:
 * - descendants by parent pid (while the command's own process is alive);
 * - members of its process group (what `kill(-pgid)` reaches);
 * - any process whose environment holds the tag: this catches a `setsid`
 *   grandchild that left the group and was re-parented to init, because the
 *   environment is inherited across fork, exec and setsid.
 * A process escapes only by leaving the group or session AND exec-ing with an
 * environment that drops the tag (`env -i`), after its parent died. Under
 * bubblewrap the PID namespace closes that gap: killing the sandbox's init
 * kills everything inside it.
 *
 * A scan reads every process's `stat`, but the environment only of processes
 * started no earlier than the command (the `starttime` of `stat`): every
 * process of the command was, and on a busy host the environments of all the
 * others were two thirds of a scan's cost.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

/** Name of the environment variable that tags a command's processes. */
export const PROCESS_TAG_VARIABLE = 'TETHER_PROCESS_TAG';

/** Rounds of scan-and-kill before giving up on processes that keep forking or take long to die. */
const MAX_ROUNDS = 100;
/** Longest pause between rounds, for SIGKILL to take effect. */
const ROUND_PAUSE_MS = 5;

interface ProcessEntry {
  pid: number;
  ppid: number;
  pgid: number;
  state: string;
  /** When it started, in clock ticks since boot (field 22 of `stat`). */
  startTicks: number;
}

/** One buffer for every read of `/proc`: the reads are synchronous. */
let buffer = Buffer.allocUnsafe(16 * 1024);

/**
 * The whole of a `/proc` file, read with one open and as few reads as it takes
 * (`readFileSync` adds an `fstat` and a buffer per file: a scan reads hundreds).
 * The result is a view of the shared buffer, valid until the next read.
 */
function readProcFile(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        const larger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(larger);
        buffer = larger;
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.subarray(0, length);
      length += read;
      // A `stat` line is whole at its newline: no read to see the end of the file.
      if (buffer[length - 1] === 0x0a && file.endsWith('/stat')) return buffer.subarray(0, length);
    }
  } finally {
    closeSync(fd);
  }
}

/** Parses `/proc/<pid>/stat`; the command name may hold spaces and parentheses. */
function readStat(pid: number): ProcessEntry | undefined {
  try {
    const stat = readProcFile(`/proc/${pid}/stat`).toString('latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      state: fields[0] ?? '?',
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      startTicks: Number(fields[19]),
    };
  } catch {
    return undefined;
  }
}

/**
 * When `pid` started, in clock ticks since boot (undefined when it is gone),
 * for {@link ProcessTreeIdentity.startTicks}.
 */
export function processStartTicks(pid: number): number | undefined {
  return readStat(pid)?.startTicks;
}

function listPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (/^\d+$/.test(name)) pids.push(Number(name));
  }
  return pids;
}

function hasTag(pid: number, tag: Buffer): boolean {
  try {
    return readProcFile(`/proc/${pid}/environ`).includes(tag);
  } catch {
    return false;
  }
}

/**
 * Whether `pid` is a live process (a zombie counts as dead: it has exited and
 * only waits to be reaped).
 */
export function isProcessAlive(pid: number): boolean {
  const entry = readStat(pid);
  return entry !== undefined && entry.state !== 'Z' && entry.state !== 'X';
}

/** What identifies a command's processes. */
export interface ProcessTreeIdentity {
  /** The spawned process; also its process group id. */
  pid: number;
  /** The value of {@link PROCESS_TAG_VARIABLE} in the command's environment. */
  tag: string;
  /** Whether `pid` has not exited yet; after its exit the number could be reused, so descendants are no longer walked. */
  rootAlive: () => boolean;
  /**
   * When `pid` started ({@link processStartTicks}): a process that started
   * earlier is none of the command's, and its environment is not read. Unknown:
   * every environment is.
   */
  startTicks?: number | undefined;
}

/** The live processes of a command, from one scan of `/proc`. */
export function findProcessTree(identity: ProcessTreeIdentity): number[] {
  const tag = Buffer.from(`${PROCESS_TAG_VARIABLE}=${identity.tag}\0`);
  const entries = listPids()
    .map(readStat)
    .filter(
      (entry): entry is ProcessEntry => entry !== undefined && entry.state !== 'Z' && entry.state !== 'X',
    );
  const found = new Set<number>();
  if (identity.rootAlive()) {
    const children = new Map<number, number[]>();
    for (const entry of entries) {
      const list = children.get(entry.ppid);
      if (list === undefined) children.set(entry.ppid, [entry.pid]);
      else list.push(entry.pid);
    }
    const queue = [identity.pid];
    for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
      found.add(pid);
      queue.push(...(children.get(pid) ?? []));
    }
  }
  const since = identity.startTicks ?? 0;
  for (const entry of entries) {
    if (entry.pgid === identity.pid || (!(entry.startTicks < since) && hasTag(entry.pid, tag))) {
      found.add(entry.pid);
    }
  }
  found.delete(process.pid);
  const live = new Set(entries.map((entry) => entry.pid));
  return [...found].filter((pid) => live.has(pid));
}

/**
 * Kills a command and every process it started, repeating until a scan of
 * `/proc` finds none left (a process forking while it is killed is caught by
 * the next round).
 * @returns pids still alive after the last round (empty on success)
 */
export async function killProcessTree(identity: ProcessTreeIdentity): Promise<number[]> {
  try {
    process.kill(-identity.pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
  // The group's processes (the launcher's watchdog at least) were just killed: a scan now would
  // find them dying and need a second one after them.
  await groupDeath(identity.pid);
  let remaining: number[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    remaining = findProcessTree(identity);
    if (remaining.length === 0) return [];
    for (const pid of remaining) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Exited meanwhile.
      }
    }
    await deaths(remaining);
  }
  return remaining.filter(isProcessAlive);
}

/**
 * Waits until no process of the group `pgid` is left (reaped; a zombie still counts), for at most
 * {@link ROUND_PAUSE_MS}: `kill(-pgid, 0)`, no scan of `/proc`.
 */
async function groupDeath(pgid: number): Promise<void> {
  const until = performance.now() + ROUND_PAUSE_MS;
  for (let look = 0; performance.now() < until; look++) {
    try {
      process.kill(-pgid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return;
    }
    await (look < 5 ? new Promise<void>((resolve) => setImmediate(resolve)) : delay(1));
  }
}

/**
 * Waits until the processes just killed are dead, for at most
 * {@link ROUND_PAUSE_MS}, before the next scan: each of a command is killed
 * about as soon as it runs again (a scan takes milliseconds, the wait mostly
 * microseconds), where a fixed pause cost its full length on every command.
 */
async function deaths(pids: readonly number[]): Promise<void> {
  const until = performance.now() + ROUND_PAUSE_MS;
  for (let look = 0; pids.some(isProcessAlive) && performance.now() < until; look++) {
    await (look < 5 ? new Promise<void>((resolve) => setImmediate(resolve)) : delay(1));
  }
}

/**
 * Kills every process on this host whose tag names `runId` (tags are
 * `<run id>.<nonce>`): what an earlier owner of the run left behind when it
 * died in a way its watchdog could not see. Only processes whose environment
 * this process may read are found (all of them, for a root worker).
 * @returns how many processes were killed
 */
export async function killRunProcesses(runId: string): Promise<number> {
  const prefix = Buffer.from(`${PROCESS_TAG_VARIABLE}=${runId}.`);
  let killed = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const found = listPids().filter(
      (pid) => pid !== process.pid && hasTag(pid, prefix) && isProcessAlive(pid),
    );
    if (found.length === 0) return killed;
    for (const pid of found) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // Exited meanwhile.
      }
    }
    await delay(ROUND_PAUSE_MS);
  }
  return killed;
}
