// .tether/stack.json: where a running pnpm start is, for pnpm demo, the tether CLI and other tools.
// Written once the stack is up (and again when a worker comes back with a new pid), removed when it
// stops. A stack killed with -9 leaves it behind: its `pid` no longer runs, and readers skip it.
// Beside each pid it records when that process started (`startTimes`), so that the next pnpm start
// can tell the processes the file names from others that got their pids since.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The stack's directory: TETHER_HOME (against the repository's root), else `<root>/.tether`. */
export function stackHome(root, env) {
  return resolve(root, env.TETHER_HOME?.trim() || '.tether');
}

/** The stack file of the stack whose directory is `home`. */
export function stackFilePath(home) {
  return join(home, 'stack.json');
}

/** A Redis URL without its credentials: the file is for finding the stack, never for secrets. */
export function withoutCredentials(url) {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return undefined;
  }
}

/** Writes the file whole (a reader never sees half of it), readable by its owner only. */
export function writeStackFile(path, content) {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

export function removeStackFile(path) {
  rmSync(path, { force: true });
}

const PROC = existsSync('/proc/self/stat');

/**
 * When the process `pid` started, as the system tells (on Linux the start time in clock ticks since
 * boot from /proc, elsewhere `ps -o lstart`), or undefined when it does not run (a zombie does not).
 * With the pid, it names one process: a pid the system gives to another process later comes with
 * another start time.
 */
export function processStartTime(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (PROC) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return undefined;
    }
    // Fields after the command's name, which is in parentheses and may hold spaces: state is the
    // first, the start time the twentieth.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? undefined : fields[19];
  }
  const ps = spawnSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8' });
  return (ps.status === 0 && ps.stdout.trim()) || undefined;
}

/** The start time of each of `pids` that runs, by pid: what the stack file records beside them. */
export function startTimes(pids) {
  const times = {};
  for (const pid of pids) {
    const time = processStartTime(pid);
    if (time !== undefined) times[pid] = time;
  }
  return times;
}
