// What a pnpm start killed with -9 left running. Its API, workers and Redis each run in a process
// group of their own (so that a Ctrl-C at the terminal reaches only pnpm start), so they outlive it,
// holding its ports and its Redis data. Its stack file names them: the next start stops them.
//
// A process is only ever signalled while it is the one the file named: same pid, same start time
// (a pid the system gave to another process since has another). A file without start times (an
// older pnpm start's) gives processes that cannot be told apart from others: they are named, never
// signalled.
import { readFileSync } from 'node:fs';
import { processStartTime } from './stack-file.mjs';

/** The processes a stack file names, each `{ name, pid }`: the API, the workers, then Redis. */
function named(file) {
  const pids = file.pids ?? {};
  return [
    { name: 'api', pid: pids.api },
    ...Object.entries(pids.workers ?? {}).map(([name, pid]) => ({ name, pid })),
    { name: 'redis', pid: pids.redis },
  ].filter(({ pid }) => Number.isInteger(pid) && pid > 1);
}

/** Is the process `pid` running, and, when the file recorded its start time, the same process? */
function runs(pid, recorded) {
  const started = processStartTime(pid);
  return started !== undefined && (recorded === undefined || started === recorded);
}

/** The stack file at `path` when its pnpm start is gone (or its pid is another process's now). */
function staleFile(path) {
  let file;
  try {
    file = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof file?.pid !== 'number') return undefined;
  return runs(file.pid, file.startTimes?.[file.pid]) ? undefined : file;
}

/** Is there a stack file at `path` whose pnpm start is gone? */
export function isStale(path) {
  return staleFile(path) !== undefined;
}

/**
 * The processes a killed `pnpm start` left running: those of a stale stack file that still run,
 * each `{ name, pid, startTime }`, where `startTime` is undefined for a file that recorded none.
 * Empty when there is no file, its stack still runs, or nothing is left.
 */
export function leftovers(path) {
  const file = staleFile(path);
  if (file === undefined) return [];
  const times = file.startTimes ?? {};
  return named(file)
    .map((entry) => ({ ...entry, startTime: times[entry.pid] }))
    .filter(({ pid, startTime }) => runs(pid, startTime));
}

/** `kill` for the process groups of `processes`, as a shell command. */
export function killCommand(processes) {
  return `kill -TERM -- ${processes.map(({ pid }) => `-${pid}`).join(' ')}`;
}

/**
 * Stops `processes` (from {@link leftovers}, each with its start time): SIGTERM to each one's
 * process group, the API and workers first (they drain) and Redis last, then SIGKILL to a group
 * still running after `timeoutMs`; each signal only while the process is the one the file named.
 * Resolves with those stopped, those it may not signal (EPERM: another user's), and those still
 * running even so. A process without a start time, or that is not the one named, is left alone.
 */
export async function stopLeftovers(processes, { timeoutMs = 15_000, pollMs = 50 } = {}) {
  const refused = [];
  const same = (entry) => entry.startTime !== undefined && processStartTime(entry.pid) === entry.startTime;
  const signal = (entry, name) => {
    // -1 would be every process this user may signal: never pid 1, never this process's.
    if (entry.pid <= 1 || entry.pid === process.pid || !same(entry)) return false;
    try {
      process.kill(-entry.pid, name);
      return true;
    } catch (error) {
      if (error.code === 'EPERM') refused.push(entry);
      else if (error.code === 'ESRCH') {
        // Not a group's leader after all: the process alone.
        try {
          process.kill(entry.pid, name);
          return true;
        } catch {}
      }
      return false;
    }
  };
  const gone = async (entries, withinMs) => {
    const deadline = Date.now() + withinMs;
    let left = entries.filter(same);
    while (left.length > 0 && Date.now() < deadline) {
      // Not children of this process: nothing to await but their end, so their pids are polled.
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      left = left.filter(same);
    }
    return left;
  };
  const services = processes.filter(({ name }) => name !== 'redis');
  const redis = processes.filter(({ name }) => name === 'redis');
  const signalled = [];
  for (const batch of [services, redis]) {
    const terminated = batch.filter((entry) => signal(entry, 'SIGTERM'));
    signalled.push(...terminated);
    const stubborn = await gone(terminated, timeoutMs);
    for (const entry of stubborn) signal(entry, 'SIGKILL');
    await gone(stubborn, 5_000);
  }
  return {
    stopped: signalled.filter((entry) => !same(entry)),
    refused,
    running: signalled.filter(same),
  };
}

/** `api (pid 1), worker-1 (pid 2)`. */
export function processList(processes) {
  return processes.map(({ name, pid }) => `${name} (pid ${pid})`).join(', ');
}
