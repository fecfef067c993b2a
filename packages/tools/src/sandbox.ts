/**
 * How `bash` commands are isolated: the bubblewrap probe, the bwrap argument
 * list and the environment allow-list. Running and killing lives in
 * `run-command.ts`.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, realpathSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { relativeInside } from './confine-path.js';
import { PROCESS_TAG_VARIABLE } from './process-tree.js';
import type { SandboxMode } from './types.js';

/** `PATH` inside a command's environment (the worker's own `PATH` is not passed on). */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
const SH_CANDIDATES = ['/bin/sh', '/usr/bin/sh'];
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

/** Absolute paths of the programs `bash` runs (bash and a POSIX sh are required; bwrap only for the sandbox). */
export interface HostPrograms {
  bash: string | undefined;
  sh: string | undefined;
  bwrap: string | undefined;
}

/** Looks the programs up in the usual system directories (never through the worker's `PATH`). */
export function findHostPrograms(): HostPrograms {
  return {
    bash: findExecutable(BASH_CANDIDATES),
    sh: findExecutable(SH_CANDIDATES),
    bwrap: findExecutable(BWRAP_CANDIDATES),
  };
}

/** Whether bubblewrap builds the whole sandbox on this host, and why not. */
export interface BwrapProbe {
  ok: boolean;
  /** Absolute path of bwrap, when found. */
  path: string | undefined;
  /** `ok`, or what failed. */
  detail: string;
  /** Whether commands get a user namespace of their own (they do wherever the kernel allows one). */
  userNamespace: boolean;
  /** The uid commands run as, on the host (known once the probe ran a command). */
  uid: number | undefined;
}

/** The unprivileged host user a root worker runs commands as. */
export interface SandboxUser {
  uid: number;
  gid: number;
}

/** `nobody`/`nogroup`: the default user of commands when the worker runs as root. */
export const DEFAULT_SANDBOX_USER: Readonly<SandboxUser> = Object.freeze({ uid: 65534, gid: 65534 });

/**
 * The host user commands run as: `configured` (or {@link DEFAULT_SANDBOX_USER})
 * when the worker is root, the worker's own user otherwise (undefined: no
 * change of user).
 */
export function sandboxUserFor(configured?: SandboxUser): SandboxUser | undefined {
  return isRoot() ? (configured ?? DEFAULT_SANDBOX_USER) : undefined;
}

let root: boolean | undefined;

/**
 * Whether this process runs as root, asked once: a worker never changes its user, and `getuid` is a
 * system call, asked twice per run (about 9 µs each in bench:throughput, in a VM that traps them).
 */
function isRoot(): boolean {
  root ??= process.getuid?.() === 0;
  return root;
}

const probes = new Map<string, Promise<BwrapProbe>>();

/** The checks the probe runs inside the sandbox; each line of output is parsed below. */
const PROBE_SCRIPT = [
  'grep -E "^(CapEff|CapPrm|CapBnd|Uid):" /proc/self/status',
  'echo "map: $(tr -s " \n" "  " < /proc/self/uid_map)"',
  'touch probe-write && echo "write: ok"',
  'touch /probe-write 2>/dev/null && echo "root: writable"',
  'exit 0',
].join('\n');

/** Judges the probe's output; returns the failure, or the facts. */
export function judgeProbe(output: string): { problem: string } | { userNamespace: boolean; uid: number } {
  const field = (name: string) => output.match(new RegExp(`^${name}:\\s*(.*)$`, 'm'))?.[1]?.trim();
  for (const cap of ['CapEff', 'CapPrm', 'CapBnd']) {
    const value = field(cap);
    if (value === undefined) return { problem: `${cap} could not be read inside the sandbox` };
    if (!/^0+$/.test(value)) return { problem: `commands keep capabilities (${cap} ${value})` };
  }
  const uid = Number(field('Uid')?.split(/\s+/)[0]);
  if (!Number.isInteger(uid)) return { problem: 'the uid inside the sandbox could not be read' };
  if (field('root') !== undefined) return { problem: 'the root file system is writable inside the sandbox' };
  if (field('write') !== 'ok') return { problem: 'the workspace is not writable inside the sandbox' };
  const map = field('map') ?? '';
  return { userNamespace: map !== '' && map !== '0 0 4294967295', uid };
}

async function runProbe(user: SandboxUser | undefined): Promise<BwrapProbe> {
  const { bwrap, bash } = findHostPrograms();
  const failed = (path: string | undefined, detail: string): BwrapProbe => ({
    ok: false,
    path,
    detail,
    userNamespace: false,
    uid: undefined,
  });
  if (bwrap === undefined) return failed(undefined, 'bwrap is not installed');
  if (bash === undefined) return failed(bwrap, 'bash is not installed');
  const base = await mkdtemp(path.join(tmpdir(), 'tether-probe-'));
  const workspace = path.join(base, 'ws');
  try {
    await chmod(base, 0o711);
    await mkdir(workspace);
    if (user !== undefined) await chown(workspace, user.uid, user.gid);
    const attempt = (userNamespace: boolean) =>
      spawnCollect(
        bwrap,
        [
          ...buildBwrapArgs({
            workspace,
            workspaceRoot: base,
            allowNetwork: false,
            tmpBytes: 1024 * 1024,
            userNamespace,
          }),
          '--',
          bash,
          '-c',
          PROBE_SCRIPT,
        ],
        user,
      );
    // A user namespace where the kernel allows one; else a setuid bwrap may still build the rest.
    let run = await attempt(true);
    if (run.code !== 0) {
      const without = await attempt(false);
      if (without.code === 0) run = without;
    }
    const { code, signal, stdout, stderr } = run;
    if (code !== 0) {
      const why = stderr.trim() || (signal === null ? `exit code ${code}` : `signal ${signal}`);
      return failed(bwrap, `bwrap failed: ${why}`);
    }
    const verdict = judgeProbe(stdout);
    if ('problem' in verdict) return failed(bwrap, verdict.problem);
    if (verdict.uid === 0 && !verdict.userNamespace) {
      return failed(bwrap, 'commands would run as root without a user namespace');
    }
    return { ok: true, path: bwrap, detail: 'ok', userNamespace: verdict.userNamespace, uid: verdict.uid };
  } catch (error) {
    return failed(bwrap, error instanceof Error ? error.message : String(error));
  } finally {
    await rm(base, { recursive: true, force: true }).catch(() => undefined);
  }
}

function spawnCollect(
  file: string,
  args: string[],
  user: SandboxUser | undefined,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    const child = spawn(file, args, {
      env: { PATH: SANDBOX_PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
      ...(user === undefined ? {} : { uid: user.uid, gid: user.gid }),
    });
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (stdout.length < 4000) stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    child.on('error', (error) => resolve({ code: -1, signal: null, stdout, stderr: error.message }));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * Checks once per process (and per user) whether bubblewrap builds the whole
 * sandbox `bash` uses: it runs a command in exactly that sandbox and checks
 * from inside that no capability is left, the root is read-only and the
 * workspace writable. Later calls share the first answer.
 */
export function probeBwrap(user: SandboxUser | undefined = sandboxUserFor()): Promise<BwrapProbe> {
  const key = user === undefined ? 'self' : `${user.uid}:${user.gid}`;
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runProbe(user);
    probes.set(key, probe);
  }
  return probe;
}

/** Forgets the cached probes (tests; a host that installed bwrap meanwhile). */
export function resetBwrapProbe(): void {
  probes.clear();
}

/**
 * Why `user` cannot reach `dir` (every ancestor must be searchable by it:
 * bwrap binds the workspace as that user), or undefined when it can.
 */
export async function unreachableBy(dir: string, user: SandboxUser | undefined): Promise<string | undefined> {
  const blocked = await unsearchableAncestor(dir, user);
  return blocked === undefined || user === undefined
    ? undefined
    : `${blocked.path} is not searchable by uid ${user.uid}, which runs the commands (${blocked.fix}, or move TETHER_WORKSPACE_ROOT)`;
}

/** The search bit of a directory's owner, group and others. */
const SEARCH_BIT = { u: 0o100, g: 0o010, o: 0o001 } as const;

/**
 * The first of `dir` and its ancestors, from `/` down, that `user` may not
 * search, and the command that lets it (`chmod o+x <path>`, or `g+x`, `u+x`
 * when the user is its group or its owner, whose bits are the ones that
 * count then); undefined when `user` reaches `dir`, or is undefined (the
 * worker's own user). A directory not made yet counts as reachable: the
 * worker makes it searchable.
 */
export async function unsearchableAncestor(
  dir: string,
  user: SandboxUser | undefined,
): Promise<{ path: string; fix: string } | undefined> {
  if (user === undefined) return undefined;
  const parts = path
    .resolve(dir)
    .split(path.sep)
    .filter((part) => part !== '');
  let current: string = path.sep;
  for (const part of ['', ...parts]) {
    current = path.join(current, part);
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(current);
    } catch {
      return undefined; // Made later by the worker, with a searchable mode.
    }
    const who = info.uid === user.uid ? 'u' : info.gid === user.gid ? 'g' : 'o';
    if ((info.mode & SEARCH_BIT[who]) === 0) return { path: current, fix: `chmod ${who}+x ${current}` };
  }
  return undefined;
}

/** The sandbox a call actually uses. */
export interface EffectiveSandbox {
  mode: 'bwrap' | 'none';
  /** Under bwrap: whether commands get a user namespace of their own. */
  userNamespace?: boolean;
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
  if (result.ok) return { mode: 'bwrap', userNamespace: result.userNamespace };
  if (requested === 'bwrap') return { unavailable: result.detail };
  return { mode: 'none', fallbackReason: result.detail };
}

/** What a bwrap sandbox is built from. */
export interface BwrapSpec {
  /** Real path of the workspace: the only writable host directory. */
  workspace: string;
  /**
   * Real path of the directory that holds every run's workspace: it is covered
   * by an empty tmpfs, and only `workspace` is bound back, so no other run's
   * files are visible.
   */
  workspaceRoot?: string | undefined;
  allowNetwork: boolean;
  /** Size of the private tmpfs on `/tmp`, in bytes. */
  tmpBytes: number;
  /**
   * A user namespace of the command's own, with nested ones refused (where the
   * kernel allows one: see {@link BwrapProbe.userNamespace}). Default true.
   */
  userNamespace?: boolean;
  /**
   * Host directories seen read-only at their targets, each under `/run`
   * (its tmpfs is where their mount points can be made; the host's root is
   * read-only): the tenant's skills at `/run/skills`.
   */
  readOnlyBinds?: readonly { source: string; target: string; hide?: string | undefined }[] | undefined;
}

/**
 * The bubblewrap options (everything before `--`) for a command:
 * - a new user namespace (where the kernel allows one), every capability
 *   dropped (bounding set included), and no nested user namespaces: mount,
 *   umount, chroot, ptrace of the host and raw sockets all fail;
 * - the host's root read-only, a fresh read-only `/dev` (null, zero, random,
 *   tty and friends only) and a `/proc` of the sandbox's own PID namespace (the
 *   worker's processes and their environments are not visible);
 * - a private, size-limited tmpfs on `/tmp`, an empty read-only tmpfs on
 *   `/run` (host unix sockets such as `/run/docker.sock` are hidden) but for
 *   the read-only binds asked for (`/run/skills`), an empty
 *   tmpfs over the workspace root (other runs' workspaces are hidden), then
 *   the workspace bound read-write at its real path and used as the working
 *   directory;
 * - new PID, IPC, UTS and cgroup namespaces, a new network namespace with only
 *   loopback unless the network is allowed, a new session (no TIOCSTI into
 *   the worker's terminal), and SIGKILL when bwrap dies.
 */
export function buildBwrapArgs(spec: BwrapSpec): string[] {
  const args = spec.userNamespace === false ? [] : ['--unshare-user', '--disable-userns'];
  args.push(
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
  );
  if (!spec.allowNetwork) args.push('--unshare-net');
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  args.push('--size', String(spec.tmpBytes), '--tmpfs', '/tmp', '--tmpfs', '/run');
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
  for (const bind of spec.readOnlyBinds ?? []) args.push('--ro-bind', bind.source, bind.target);
  args.push('--remount-ro', '/run');
  // What holds a bind's source (other tenants' skills) is hidden at its host path.
  for (const bind of spec.readOnlyBinds ?? []) {
    if (bind.hide !== undefined) args.push('--tmpfs', bind.hide, '--remount-ro', bind.hide);
  }
  if (spec.workspaceRoot !== undefined && relativeInside(spec.workspaceRoot, spec.workspace) !== undefined) {
    args.push('--tmpfs', spec.workspaceRoot);
  }
  args.push('--bind', spec.workspace, spec.workspace);
  if (spec.workspaceRoot !== undefined && relativeInside(spec.workspaceRoot, spec.workspace) !== undefined) {
    args.push('--remount-ro', spec.workspaceRoot);
  }
  args.push('--remount-ro', '/dev', '--chdir', spec.workspace);
  return args;
}

/**
 * The values the launcher gives `ulimit` for a command's rlimits, in its
 * units: `-f` in 512-byte blocks (POSIX `sh`: a file size limit that is not
 * a multiple of 512 is rounded down), `-t` in seconds, `-n` a count.
 */
export function ulimitValues(limits: {
  fileSizeBytes: number;
  cpuSeconds: number;
  openFiles: number;
}): [string, string, string] {
  return [
    String(Math.floor(limits.fileSizeBytes / 512)),
    String(limits.cpuSeconds),
    String(limits.openFiles),
  ];
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
