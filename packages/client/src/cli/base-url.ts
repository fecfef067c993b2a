/**
 * Where the CLI finds the API, first match wins:
 *
 * 1. `--url`;
 * 2. `TETHER_URL`;
 * 3. the local stack's file: `TETHER_STACK_FILE` if set, else the nearest `.tether/stack.json`
 *    in the working directory or above it. `pnpm start` writes it while it runs and removes it
 *    when it stops; a file whose `pid` no longer runs (a stack killed with -9) is stale and skipped;
 * 4. {@link DEFAULT_URL}.
 *
 * Installed outside the repository, there is usually no file, and the default applies.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

/** Where the base URL came from, as messages name it. */
export type UrlSource = '--url' | 'TETHER_URL' | 'stack file' | 'default';

export interface ResolvedUrl {
  url: string;
  source: UrlSource;
  /** The stack file read, when the URL came from one. */
  file?: string;
}

/** What the CLI reads from `.tether/stack.json` (`pnpm start` writes more: see docs/client.md). */
export interface StackFile {
  apiUrl: string;
  /** The `pnpm start` process: the file is stale once it no longer runs. */
  pid: number;
}

/** Resolves the API's base URL: see the module's comment for the order. */
export function resolveBaseUrl(input: {
  flag?: string | undefined;
  env: Record<string, string | undefined>;
  cwd: string;
}): ResolvedUrl {
  if (input.flag !== undefined) return { url: input.flag, source: '--url' };
  const fromEnv = nonEmpty(input.env.TETHER_URL);
  if (fromEnv !== undefined) return { url: fromEnv, source: 'TETHER_URL' };
  const file = stackFilePath(input.env, input.cwd);
  const stack = file === undefined ? undefined : readStackFile(file);
  if (file !== undefined && stack !== undefined) return { url: stack.apiUrl, source: 'stack file', file };
  return { url: DEFAULT_URL, source: 'default' };
}

/** `TETHER_STACK_FILE` (against `cwd`), else the nearest `.tether/stack.json` at or above `cwd`. */
function stackFilePath(env: Record<string, string | undefined>, cwd: string): string | undefined {
  const given = nonEmpty(env.TETHER_STACK_FILE);
  if (given !== undefined) return resolve(cwd, given);
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const candidate = join(dir, '.tether', 'stack.json');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The stack file at `path` if it is one and its `pnpm start` still runs; undefined when it is
 * missing, malformed or stale.
 */
export function readStackFile(path: string): StackFile | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { apiUrl, pid } = parsed as Record<string, unknown>;
  if (typeof apiUrl !== 'string' || !/^https?:\/\//.test(apiUrl)) return undefined;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return undefined;
  return running(pid) ? { apiUrl, pid } : undefined;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
