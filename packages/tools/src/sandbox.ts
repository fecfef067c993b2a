/**
 * How `bash` commands are isolated: the bubblewrap probe, the bwrap argument
 * list and the environment allow-list. Running and killing lives in
 * `run-command.ts`.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, realpathSync } from 'node:fs';
import { PROCESS_TAG_VARIABLE } from './process-tree.js';
import type { SandboxMode } from './types.js';
import { relativeInside } from './workspace.js';

/** `PATH` inside a command's environment (the worker's own `PATH` is not passed on). */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
const PRLIMIT_CANDIDATES = ['/usr/bin/prlimit', '/bin/prlimit', '/usr/local/bin/prlimit'];
const BASH_CANDIDATES = ['/bin/bash', '/usr/bin/bash', '/usr/local/bin/bash'];

/** How long the bwrap probe may take before it counts as failed. */
const PROBE_TIMEOUT_MS = 10_000;

/** The first of `candidates` that is an executable file. */
export function findExecutable(candidates: readonly string[]): string | undefined {
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // Try the next one.
    }
  }
  return undefined;
}

/** Absolute paths of the programs `bash` runs (bash and prlimit are required; bwrap only for the sandbox). */
export interface HostPrograms {
  bash: string | undefined;
  prlimit: string | undefined;
  bwrap: string | undefined;
}

/** Looks the programs up in the usual system directories (never through the worker's `PATH`). */
export function findHostPrograms(): HostPrograms {
  return {
    bash: findExecutable(BASH_CANDIDATES),
    prlimit: findExecutable(PRLIMIT_CANDIDATES),
    bwrap: findExecutable(BWRAP_CANDIDATES),
  };
}

/** Whether bubblewrap works on this host, and why not. */
export interface BwrapProbe {
  ok: boolean;
  /** Absolute path of bwrap, when found. */
  path: string | undefined;
  /** `ok`, or what failed. */
  detail: string;
}

let probe: Promise<BwrapProbe> | undefined;

async function runProbe(): Promise<BwrapProbe> {
  const { bwrap, bash } = findHostPrograms();
  if (bwrap === undefined) return { ok: false, path: undefined, detail: 'bwrap is not installed' };
  if (bash === undefined) return { ok: false, path: bwrap, detail: 'bash is not installed' };
  const args = [
    '--ro-bind',
    '/',
    '/',
    '--unshare-pid',
    '--unshare-net',
    '--die-with-parent',
    '--new-session',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--',
    bash,
    '-c',
    'exit 0',
  ];
  return new Promise<BwrapProbe>((resolve) => {
    let stderr = '';
    const child = spawn(bwrap, args, {
      env: {},
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    child.on('error', (error) => resolve({ ok: false, path: bwrap, detail: error.message }));
    child.on('close', (code, signal) => {
      if (code === 0) resolve({ ok: true, path: bwrap, detail: 'ok' });
      else {
        const why = stderr.trim() || (signal === null ? `exit code ${code}` : `signal ${signal}`);
        resolve({ ok: false, path: bwrap, detail: `bwrap failed: ${why}` });
      }
    });
  });
}

/**
 * Checks once per process whether bubblewrap can build the sandbox `bash`
 * uses (read-only root, new PID and network namespaces, new /proc); later
 * calls share the first answer.
 */
export function probeBwrap(): Promise<BwrapProbe> {
  probe ??= runProbe();
  return probe;
}

/** Forgets the cached probe (tests; a host that installed bwrap meanwhile). */
export function resetBwrapProbe(): void {
  probe = undefined;
}

/** The sandbox a call actually uses. */
export interface EffectiveSandbox {
  mode: 'bwrap' | 'none';
  /** Set when `auto` fell back to `none`: why bwrap was not used. */
  fallbackReason?: string;
}

/**
 * Resolves a requested mode: `bwrap` must work, `none` is taken as is, `auto`
 * is bwrap when the probe succeeds and `none` otherwise. `probe` is for tests.
 * @returns `{ unavailable }` (the probe's detail) when the mode is `bwrap` and bubblewrap does not work
 */
export async function resolveSandbox(
  requested: SandboxMode,
  probe: () => Promise<BwrapProbe> = probeBwrap,
): Promise<EffectiveSandbox | { unavailable: string }> {
  if (requested === 'none') return { mode: 'none' };
  const result = await probe();
  if (result.ok) return { mode: 'bwrap' };
  if (requested === 'bwrap') return { unavailable: result.detail };
  return { mode: 'none', fallbackReason: result.detail };
}

/** What a bwrap sandbox is built from. */
export interface BwrapSpec {
  /** Real path of the workspace: the only writable host directory. */
  workspace: string;
  allowNetwork: boolean;
  /** Size of the private tmpfs on `/tmp` and on `/run`. */
  tmpBytes: number;
}

/**
 * The bubblewrap options (everything before `--`) for a command:
 * - the host's root read-only, a fresh `/dev` and a `/proc` of the sandbox's
 *   own PID namespace (the worker's processes and their environments are not
 *   visible);
 * - private, size-limited tmpfs on `/tmp` and `/run` (which also hides host
 *   unix sockets such as `/run/docker.sock`), then the workspace bound
 *   read-write at its real path and used as the working directory;
 * - new PID, IPC, UTS (and, where possible, cgroup) namespaces, a new network
 *   namespace with only loopback unless the network is allowed, a new session
 *   (no TIOCSTI into the worker's terminal), and SIGKILL when the worker dies.
 */
export function buildBwrapArgs(spec: BwrapSpec): string[] {
  const size = String(spec.tmpBytes);
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
  ];
  if (!spec.allowNetwork) args.push('--unshare-net');
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  args.push('--size', size, '--tmpfs', '/tmp', '--size', size, '--tmpfs', '/run');
  if (spec.allowNetwork) {
    // With the network on, DNS must keep working when resolv.conf lives under the hidden /run.
    try {
      const resolv = realpathSync('/etc/resolv.conf');
      if (relativeInside('/run', resolv) !== undefined || relativeInside('/tmp', resolv) !== undefined) {
        args.push('--ro-bind-try', resolv, resolv);
      }
    } catch {
      // No resolv.conf: nothing to keep.
    }
  }
  args.push('--bind', spec.workspace, spec.workspace, '--chdir', spec.workspace);
  return args;
}

/** The `prlimit` options (before `--`) for the limits of a command. */
export function buildPrlimitArgs(limits: {
  fileSizeBytes: number;
  cpuSeconds: number;
  openFiles: number;
}): string[] {
  return [`--fsize=${limits.fileSizeBytes}`, `--cpu=${limits.cpuSeconds}`, `--nofile=${limits.openFiles}`];
}

/**
 * The complete environment of a command: an allow-list with fixed values,
 * the run's explicit `env`, and the process tag. Nothing is inherited from the
 * worker.
 */
export function buildCommandEnv(
  workspace: string,
  extra: Readonly<Record<string, string>>,
  tag: string,
): Record<string, string> {
  return {
    PATH: SANDBOX_PATH,
    HOME: workspace,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    TMPDIR: '/tmp',
    ...extra,
    [PROCESS_TAG_VARIABLE]: tag,
  };
}
