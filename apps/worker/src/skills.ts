/**
 * The tenant's skills on this worker: what the skill tools reach (the store,
 * for the run's tenant, every write the agent's), and the read-only folders
 * `bash` sees them in.
 *
 * The skills live in Redis; a script of a skill runs from a folder on this
 * host. Each tenant's skills are written out once per version (the tenant's
 * counter every write INCRs) into `<root>/<tenant>/v<version>`, built under a
 * temporary name and renamed into place, so no run ever sees half a folder.
 * A run starts with one round trip (the index and the version, which the
 * prompt needs anyway); only a version this process has not built yet costs
 * a snapshot and the writes. Superseded folders stay while a command may still
 * use them (`retainMs`), then go. `root` is this process's own (a temporary
 * folder under the configured one, removed at close), searchable but not
 * listable by the sandbox user, and hidden from commands under bwrap.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SkillSummary } from '@tether/protocol';
import type { SkillIndex, SkillStore } from '@tether/store/skills';
import {
  probeBwrap,
  type ReadOnlyBind,
  type SandboxMode,
  type SkillsAccess,
  sandboxUserFor,
  skillNameProblem,
  skillPathProblem,
} from '@tether/tools';
import type { Logger } from 'pino';

/** Where `bash` finds the skills inside its bwrap sandbox. */
export const SKILLS_MOUNT = '/run/skills';

/** The skill tools' access to a tenant's skills: every write is the agent's (pinned skills refused). */
export function skillsAccess(store: SkillStore, tenant: string, mountPath?: string): SkillsAccess {
  return {
    list: async () => (await store.list(tenant)).skills,
    view: (name) => store.view(tenant, name),
    readFile: (name, file) => store.readFile(tenant, name, file),
    save: (write) => store.save(tenant, { ...write, byAgent: true }),
    delete: (name) => store.delete(tenant, name, { byAgent: true }),
    mountPath,
  };
}

/** What a worker has for skills: the store, the tenants' indexes, and the folders bash sees them in. */
export interface WorkerSkills {
  store: SkillStore;
  indexes: SkillIndexes;
  folders: SkillFolders;
}

/** How many tenants' indexes a worker keeps. */
const INDEXES_KEPT = 1_000;

/**
 * The tenants' skill indexes, kept by version: a run's start asks Redis only
 * for the tenant's version (a few bytes), and reads the index again only when
 * a write has changed it.
 */
export class SkillIndexes {
  readonly #store: SkillStore;
  readonly #kept = new Map<string, SkillIndex>();

  constructor(store: SkillStore) {
    this.#store = store;
  }

  /** The tenant's index as of now. */
  async current(tenant: string): Promise<SkillIndex> {
    const kept = this.#kept.get(tenant);
    if (kept !== undefined && kept.version === (await this.#store.version(tenant))) return kept;
    const index = await this.#store.list(tenant);
    this.#kept.delete(tenant);
    this.#kept.set(tenant, index);
    // The longest unused goes first (a Map keeps insertion order).
    if (this.#kept.size > INDEXES_KEPT) this.#kept.delete(this.#kept.keys().next().value as string);
    return index;
  }
}

/** A run's skills, as its attempt starts. */
export interface RunSkills {
  /** The tenant's skills, for the prompt's index. */
  entries: SkillSummary[];
  /** The folder of the tenant's skills as of now, on this host. */
  folder: string;
  /** Where bash finds them: `/run/skills` under bwrap, else `folder` itself. */
  mountPath: string;
  /** What bash's sandbox binds (under bwrap): the folder at `/run/skills`, the folder of every tenant's hidden. */
  binds: ReadOnlyBind[];
}

/**
 * The skills of a run that has the skill tools: the tenant's index and the
 * folder of its current version (one round trip for the version when both
 * are this process's already),
 * and where bash finds it: `/run/skills` when commands run under bwrap, the
 * folder's host path without a sandbox (read-only by its permissions only).
 */
export async function runSkills(
  skills: WorkerSkills,
  tenant: string,
  config: { sandbox: SandboxMode; sandboxUser: { uid: number; gid: number } },
): Promise<RunSkills> {
  const [index, bwrap] = await Promise.all([
    skills.indexes.current(tenant),
    config.sandbox === 'none'
      ? false
      : probeBwrap(sandboxUserFor(config.sandboxUser)).then((probe) => probe.ok),
  ]);
  const [folder, root] = await Promise.all([
    skills.folders.folder(tenant, index.version),
    skills.folders.root(),
  ]);
  return {
    entries: index.skills,
    folder,
    mountPath: bwrap ? SKILLS_MOUNT : folder,
    binds: bwrap ? [{ source: folder, target: SKILLS_MOUNT, hide: root }] : [],
  };
}

export interface SkillFoldersOptions {
  store: SkillStore;
  /** The folder this process makes its own folder in (`TETHER_SKILLS_CACHE_DIR`). */
  base: string;
  logger: Pick<Logger, 'warn' | 'debug'>;
  /** How long a superseded version's folder stays (ms): longer than a command may run. */
  retainMs?: number;
}

interface Built {
  version: number;
  dir: string;
}

/** The folders of tenants' skills on this host, one per tenant and version. */
export class SkillFolders {
  readonly #store: SkillStore;
  readonly #base: string;
  readonly #logger: Pick<Logger, 'warn' | 'debug'>;
  readonly #retainMs: number;
  #root: Promise<string> | undefined;
  readonly #current = new Map<string, Built>();
  readonly #building = new Map<string, Promise<Built>>();
  /** `<tenant>/<version>` of every folder written out, so none is written over. */
  readonly #written = new Set<string>();
  /** Superseded folders and when they were superseded (epoch ms). */
  readonly #old: { dir: string; since: number }[] = [];

  constructor(options: SkillFoldersOptions) {
    this.#store = options.store;
    this.#base = path.resolve(options.base);
    this.#logger = options.logger;
    this.#retainMs = options.retainMs ?? 2 * 3600_000;
  }

  /** This process's folder of every tenant's skills (made on first use); commands must not see it. */
  root(): Promise<string> {
    this.#root ??= (async () => {
      await mkdir(this.#base, { recursive: true, mode: 0o711 });
      const root = await mkdtemp(path.join(this.#base, 'w-'));
      // Searchable, not listable: the sandbox user reaches a folder it is given, never lists tenants.
      await chmod(root, 0o711);
      return root;
    })();
    return this.#root;
  }

  /**
   * The folder of the tenant's skills as of `version` (or later), read-only:
   * the one built already, or built now from a snapshot of the store.
   */
  async folder(tenant: string, version: number): Promise<string> {
    const current = this.#current.get(tenant);
    if (current !== undefined && current.version === version) return current.dir;
    // Older than what was written out: a run that read its index a moment before the last build, or
    // a tenant whose skills went back (their keys deleted or restored), which Redis's version tells.
    if (
      current !== undefined &&
      current.version > version &&
      (await this.#store.version(tenant)) >= current.version
    )
      return current.dir;
    let building = this.#building.get(tenant);
    if (building === undefined) {
      building = this.#build(tenant).finally(() => this.#building.delete(tenant));
      this.#building.set(tenant, building);
    }
    const built = await building;
    // A build that started before this version was written: once more.
    return built.version >= version ? built.dir : this.folder(tenant, version);
  }

  async #build(tenant: string): Promise<Built> {
    // A tenant name is a folder name here (the API allows letters, digits, _ and -).
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(tenant))
      throw new Error(`no skills folder for tenant ${JSON.stringify(tenant)}`);
    const root = await this.root();
    const snapshot = await this.#store.snapshot(tenant);
    const current = this.#current.get(tenant);
    if (current !== undefined && current.version === snapshot.version) return current;
    const tenantDir = path.join(root, tenant);
    await mkdir(tenantDir, { recursive: true, mode: 0o711 });
    // After the tenant's skills went back, a version number comes again: its new folder is another.
    const dir = path.join(
      tenantDir,
      this.#written.has(`${tenant}/${snapshot.version}`)
        ? `v${snapshot.version}-${randomBytes(4).toString('hex')}`
        : `v${snapshot.version}`,
    );
    this.#written.add(`${tenant}/${snapshot.version}`);
    const temp = path.join(tenantDir, `.build-${randomBytes(6).toString('hex')}`);
    try {
      await mkdir(temp, { mode: 0o755 });
      for (const skill of snapshot.skills) await this.#writeSkill(temp, skill.name, skill.files);
      await chmod(temp, 0o555);
      await rm(dir, { recursive: true, force: true });
      await rename(temp, dir);
    } catch (error) {
      await rm(temp, { recursive: true, force: true }).catch(() => undefined);
      throw error;
    }
    const built = { version: snapshot.version, dir };
    if (current !== undefined) this.#old.push({ dir: current.dir, since: Date.now() });
    this.#current.set(tenant, built);
    this.#logger.debug(
      { tenant, version: snapshot.version, skills: snapshot.skills.length },
      'skills written out',
    );
    await this.#prune();
    return built;
  }

  /** One skill's files, read-only; a name or path the format would refuse is skipped (never written outside). */
  async #writeSkill(into: string, name: string, files: Record<string, string>): Promise<void> {
    if (skillNameProblem(name) !== undefined) {
      this.#logger.warn({ skill: name }, 'a stored skill has a name the format refuses; skipped');
      return;
    }
    const skillDir = path.join(into, name);
    const dirs = new Set<string>([skillDir]);
    const writes: [string, string][] = [];
    for (const [file, content] of Object.entries(files)) {
      if (skillPathProblem(file) !== undefined) {
        this.#logger.warn(
          { skill: name, file },
          'a stored skill file has a path the format refuses; skipped',
        );
        continue;
      }
      // A file inside another file (`scripts` and `scripts/go.sh`, stored before writes checked it):
      // the inner one is skipped, so one bad skill never stops the tenant's folder being written.
      const folders = file.split('/').slice(0, -1);
      if (folders.some((_, i) => Object.hasOwn(files, folders.slice(0, i + 1).join('/')))) {
        this.#logger.warn({ skill: name, file }, 'a stored skill file is inside another file; skipped');
        continue;
      }
      const target = path.join(skillDir, file);
      for (let dir = path.dirname(target); dir !== into && !dirs.has(dir); dir = path.dirname(dir))
        dirs.add(dir);
      writes.push([target, content]);
    }
    const ordered = [...dirs].sort((a, b) => a.length - b.length);
    for (const dir of ordered) await mkdir(dir, { recursive: true, mode: 0o755 });
    await Promise.all(
      writes.map(([target, content]) =>
        // Scripts (a #! line, or anything under scripts/) can be run directly.
        writeFile(target, content, {
          mode:
            content.startsWith('#!') || target.startsWith(path.join(skillDir, 'scripts') + path.sep)
              ? 0o555
              : 0o444,
        }),
      ),
    );
    for (const dir of ordered.reverse()) await chmod(dir, 0o555);
  }

  /** Removes superseded folders older than the retention. */
  async #prune(): Promise<void> {
    const now = Date.now();
    for (let i = this.#old.length - 1; i >= 0; i--) {
      const old = this.#old[i] as { dir: string; since: number };
      if (now - old.since < this.#retainMs) continue;
      this.#old.splice(i, 1);
      await removeReadOnly(old.dir).catch((error: unknown) =>
        this.#logger.warn({ err: error, dir: old.dir }, 'could not remove an old skills folder'),
      );
    }
  }

  /** Removes this process's folder. */
  async close(): Promise<void> {
    if (this.#root === undefined) return;
    const root = await this.#root.catch(() => undefined);
    if (root !== undefined) await removeReadOnly(root).catch(() => undefined);
  }
}

/** `rm -r` of a tree whose folders are read-only (0555): made writable first. */
async function removeReadOnly(dir: string): Promise<void> {
  const open = async (at: string): Promise<void> => {
    await chmod(at, 0o755).catch(() => undefined);
    for (const entry of await readdir(at, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await open(path.join(at, entry.name));
    }
  };
  await open(dir);
  await rm(dir, { recursive: true, force: true });
}
