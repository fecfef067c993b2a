// .tether/stack.json: where a running pnpm start is, for pnpm demo, the tether CLI and other tools.
// Written once the stack is up (and again when a worker comes back with a new pid), removed when it
// stops. A stack killed with -9 leaves it behind: its `pid` no longer runs, and readers skip it.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * The processes a killed `pnpm start` left running: those of a stale stack file (its own `pid` gone)
 * that still run. Empty when there is no file, its stack still runs, or nothing is left.
 */
export function leftovers(path) {
  let file;
  try {
    file = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return [];
  }
  if (typeof file?.pid !== 'number' || running(file.pid)) return [];
  const pids = file.pids ?? {};
  return [pids.api, pids.redis, ...Object.values(pids.workers ?? {})].filter(
    (pid) => Number.isInteger(pid) && pid > 0 && running(pid),
  );
}

function running(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
