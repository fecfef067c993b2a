/**
 * Per-command control groups: a process-count and a memory limit for each
 * `bash` call, and a handle that kills every process of the call at once.
 *
 * Detection, once per process:
 * - cgroup v2, when a `cgroup2` hierarchy offers both the `pids` and `memory`
 *   controllers. Commands go under `<own cgroup>/tether/`; when the worker's
 *   own cgroup holds processes (which v2 forbids for a cgroup with
 *   controllers enabled below it), the worker first moves itself into a leaf
 *   `<own cgroup>/worker`.
 * - cgroup v1, where only v1 hierarchies carry those controllers (hybrid
 *   hosts, older kernels): `<pids mount>/tether/` and `<memory mount>/tether/`.
 * - none, with the reason, when neither can be written (a locked-down
 *   container, a non-root worker without a delegated subtree). Commands then
 *   keep only their rlimits (file size, CPU time, open files).
 *
 * A command's cgroup is named `<run id>.<nonce>`, so that a new owner of a run
 * can find and kill what an earlier owner left on this host
 * ({@link killRunCgroups}). The command enters its cgroup itself, before it
 * execs anything (see `run-command.ts`), so no process of it ever runs outside.
 *
 * A command's own cgroup files are read and written synchronously: each is a
 * system call of microseconds on the cgroup file system, where an
 * asynchronous one is four hand-offs between the event loop and the thread
 * pool (open, stat, read, close), each a wait for a thread to be scheduled:
 * 4 to 10 ms on every call's path on a busy 2-core host, for a file that
 * reads in microseconds (as `process-tree.ts` reads `/proc`).
 */
import { chownSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** Where commands' cgroups can be made on this host, or why they cannot. */
export type CgroupSupport =
  | { kind: 'v2'; base: string }
  | { kind: 'v1'; pids: string; memory: string }
  | { kind: 'none'; reason: string };

/** The limits a command's cgroup enforces. */
export interface CgroupLimits {
  /** Most processes (and threads) alive at once. */
  pidsMax: number;
  /** Most memory, private `/tmp` included (tmpfs pages are charged to the writer). */
  memoryBytes: number;
}

/** Which limit the kernel enforced during a command. */
export interface CgroupVerdict {
  /** A fork or clone failed because `pidsMax` was reached. */
  pidsLimitHit: boolean;
  /** The kernel's OOM killer killed a process for the memory limit. */
  oomKilled: boolean;
}

interface MountEntry {
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function parseMountInfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const separator = line.indexOf(' - ');
    if (separator === -1) continue;
    const left = line.slice(0, separator).split(' ');
    const right = line.slice(separator + 3).split(' ');
    const mountPoint = left[4];
    const fsType = right[0];
    if (mountPoint === undefined || fsType === undefined) continue;
    entries.push({
      mountPoint: mountPoint.replace(/\\(\d{3})/g, (_, octal: string) =>
        String.fromCharCode(Number.parseInt(octal, 8)),
      ),
      fsType,
      superOptions: (right[2] ?? '').split(','),
    });
  }
  return entries;
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** A small cgroup file, read at once (see the module's note). */
function readTextSync(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function errorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ?? (error instanceof Error ? error.message : String(error));
}

/** Where the calling process sits in the v2 hierarchy (`0::/path` of /proc/self/cgroup). */
async function ownV2Path(): Promise<string> {
  const text = (await readText('/proc/self/cgroup')) ?? '';
  const line = text.split('\n').find((entry) => entry.startsWith('0::'));
  return line === undefined ? '/' : line.slice(3) || '/';
}

async function enableControllers(dir: string): Promise<void> {
  await writeFile(path.join(dir, 'cgroup.subtree_control'), '+pids +memory');
}

async function detectV2(mount: MountEntry): Promise<CgroupSupport> {
  const controllers = ((await readText(path.join(mount.mountPoint, 'cgroup.controllers'))) ?? '').split(
    /\s+/,
  );
  if (!controllers.includes('pids') || !controllers.includes('memory')) {
    return { kind: 'none', reason: `cgroup v2 at ${mount.mountPoint} lacks the pids or memory controller` };
  }
  const own = path.join(mount.mountPoint, await ownV2Path());
  const base = path.join(own, 'tether');
  try {
    await mkdir(base, { recursive: true });
    try {
      await enableControllers(own);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
      // v2 allows no process in a cgroup that enables controllers below it: move this process into a leaf.
      const leaf = path.join(own, 'worker');
      await mkdir(leaf, { recursive: true });
      await writeFile(path.join(leaf, 'cgroup.procs'), String(process.pid));
      await enableControllers(own);
    }
    await enableControllers(base);
    return { kind: 'v2', base };
  } catch (error) {
    return { kind: 'none', reason: `cannot create cgroups under ${own} (${errorText(error)})` };
  }
}

async function detectV1(pidsMount: MountEntry, memoryMount: MountEntry): Promise<CgroupSupport> {
  const pids = path.join(pidsMount.mountPoint, 'tether');
  const memory = path.join(memoryMount.mountPoint, 'tether');
  try {
    await mkdir(pids, { recursive: true });
    await mkdir(memory, { recursive: true });
    return { kind: 'v1', pids, memory };
  } catch (error) {
    return { kind: 'none', reason: `cannot create cgroup v1 groups under ${pids} (${errorText(error)})` };
  }
}

/** Finds where commands' cgroups can be made; `mountInfo` is for tests. */
export async function detectCgroups(mountInfo?: string): Promise<CgroupSupport> {
  const text = mountInfo ?? (await readText('/proc/self/mountinfo'));
  if (text === undefined) return { kind: 'none', reason: '/proc/self/mountinfo is not readable' };
  const mounts = parseMountInfo(text);
  const v2 = mounts.filter((entry) => entry.fsType === 'cgroup2');
  for (const mount of v2) {
    const controllers = (await readText(path.join(mount.mountPoint, 'cgroup.controllers'))) ?? '';
    if (controllers.includes('pids') && controllers.includes('memory')) return detectV2(mount);
  }
  const v1 = (name: string) =>
    mounts.find((entry) => entry.fsType === 'cgroup' && entry.superOptions.includes(name));
  const pids = v1('pids');
  const memory = v1('memory');
  if (pids !== undefined && memory !== undefined) return detectV1(pids, memory);
  return {
    kind: 'none',
    reason: 'no cgroup hierarchy (v2, or v1) offers both the pids and memory controllers',
  };
}

let detected: Promise<CgroupSupport> | undefined;

/** {@link detectCgroups} once per process. */
export function cgroupSupport(): Promise<CgroupSupport> {
  detected ??= detectCgroups();
  return detected;
}

/** The directories of one cgroup, one per hierarchy (v2: one). */
function directories(support: CgroupSupport, name: string): string[] {
  if (support.kind === 'v2') return [path.join(support.base, name)];
  if (support.kind === 'v1') return [path.join(support.pids, name), path.join(support.memory, name)];
  return [];
}

function readPids(dir: string): number[] {
  const text = readTextSync(path.join(dir, 'cgroup.procs')) ?? '';
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map(Number);
}

function eventCount(text: string | undefined, key: string): number {
  const line = (text ?? '').split('\n').find((entry) => entry.startsWith(`${key} `));
  return line === undefined ? 0 : Number(line.slice(key.length + 1)) || 0;
}

/**
 * Kills every process in `dir` until it is empty; the pids hierarchy holds all of a command's
 * processes. `v2`: try `cgroup.kill` first (v1 has none: one file operation less per command).
 */
async function killAll(dir: string, v2: boolean): Promise<number[]> {
  if (v2) {
    try {
      writeFileSync(path.join(dir, 'cgroup.kill'), '1');
    } catch {
      // A kernel before 5.14: kill one by one below.
    }
  }
  let remaining: number[] = [];
  for (let round = 0; round < 220; round++) {
    remaining = readPids(dir);
    if (remaining.length === 0) return [];
    for (const pid of remaining) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Exited meanwhile.
      }
    }
    // A killed process leaves its cgroup within microseconds: look again at once a few times, then back off.
    await (round < 20 ? new Promise<void>((resolve) => setImmediate(resolve)) : delay(round < 40 ? 2 : 10));
  }
  return remaining;
}

async function removeDir(dir: string): Promise<void> {
  for (let round = 0; round < 50; round++) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') throw error;
      // Killed processes take a moment to leave the group.
      await delay(5);
    }
  }
}

/** One command's cgroup. */
export class CommandCgroup {
  readonly #support: CgroupSupport;
  readonly #dirs: string[];

  private constructor(support: CgroupSupport, dirs: string[]) {
    this.#support = support;
    this.#dirs = dirs;
  }

  /**
   * Creates the cgroup `name` with `limits`. When `owner` is given (a root
   * worker running commands as an unprivileged user), the `cgroup.procs`
   * files are handed to that user so the command can enter the group itself;
   * the limits stay root's.
   */
  static async create(
    support: CgroupSupport,
    name: string,
    limits: CgroupLimits,
    owner?: { uid: number; gid: number },
  ): Promise<CommandCgroup> {
    if (support.kind === 'none') throw new Error(`no cgroups: ${support.reason}`);
    const dirs = directories(support, name);
    const group = new CommandCgroup(support, dirs);
    try {
      for (const dir of dirs) mkdirSync(dir);
      if (support.kind === 'v2') {
        const [dir] = dirs as [string];
        writeFileSync(path.join(dir, 'pids.max'), String(limits.pidsMax));
        writeFileSync(path.join(dir, 'memory.max'), String(limits.memoryBytes));
        try {
          writeFileSync(path.join(dir, 'memory.swap.max'), '0');
        } catch {
          // No swap accounting on this host.
        }
      } else {
        const [pids, memory] = dirs as [string, string];
        writeFileSync(path.join(pids, 'pids.max'), String(limits.pidsMax));
        // With swap accounting on, memory plus swap gets the same bound (no escape into swap); the
        // plain limit first, as the kernel wants memsw >= memory.
        writeFileSync(path.join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        try {
          writeFileSync(path.join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        } catch {
          // No swap accounting on this host.
        }
      }
      if (owner !== undefined) {
        for (const file of group.procsFiles) chownSync(file, owner.uid, owner.gid);
      }
      return group;
    } catch (error) {
      await group.remove().catch(() => undefined);
      throw error;
    }
  }

  /**
   * The `cgroup.procs` files a process writes its pid to, to enter the group;
   * the last one is the group that holds every process of the command.
   */
  get procsFiles(): string[] {
    const files = this.#dirs.map((dir) => path.join(dir, 'cgroup.procs'));
    // v1: the memory group first, the pids group (used for killing) last.
    return files.reverse();
  }

  /** Which limits the kernel enforced so far. */
  async verdict(): Promise<CgroupVerdict> {
    const [first, second] = this.#dirs;
    if (first === undefined) return { pidsLimitHit: false, oomKilled: false };
    const memoryDir = this.#support.kind === 'v1' ? (second ?? first) : first;
    const pidsEvents = readTextSync(path.join(first, 'pids.events'));
    const memoryEvents = readTextSync(
      path.join(memoryDir, this.#support.kind === 'v1' ? 'memory.oom_control' : 'memory.events'),
    );
    return {
      pidsLimitHit: eventCount(pidsEvents, 'max') > 0,
      oomKilled: eventCount(memoryEvents, 'oom_kill') > 0,
    };
  }

  /** Kills every process of the command; resolves with pids that would not die (expected empty). */
  kill(): Promise<number[]> {
    const [holder] = this.#dirs;
    return holder === undefined ? Promise.resolve([]) : killAll(holder, this.#support.kind === 'v2');
  }

  /** Kills what is left and removes the group from every hierarchy. */
  async remove(): Promise<void> {
    await this.kill();
    for (const dir of this.#dirs) await removeDir(dir);
  }
}

/**
 * Kills and removes every cgroup of `runId` left on this host (by an earlier
 * owner of the run that died or lost its lock).
 * @returns how many groups were found
 */
export async function killRunCgroups(support: CgroupSupport, runId: string): Promise<number> {
  if (support.kind === 'none') return 0;
  const parent = support.kind === 'v2' ? support.base : support.pids;
  let names: string[];
  try {
    names = (await readdir(parent)).filter((name) => name.startsWith(`${runId}.`));
  } catch {
    return 0;
  }
  for (const name of names) {
    for (const dir of directories(support, name)) {
      try {
        if ((await stat(dir)).isDirectory()) {
          await killAll(dir, support.kind === 'v2');
          await removeDir(dir);
        }
      } catch {
        // Removed meanwhile.
      }
    }
  }
  return names.length;
}
