import type { SkillSummary, SkillView, SkillWrite, SkillWriteResult } from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import * as scripts from './commands/scripts.js';

/**
 * A tenant's skills in Redis, under the tenant's hash tag (see keys.ts): an
 * index (name → summary), one hash of files per skill (path → content), and
 * the tenant's totals (a version counter every change INCRs, and the bytes
 * of every file). Writes are Lua scripts that check the limits and keep the
 * index and totals in the same step; reads take one round trip. Every
 * process sees a change at once: there is no copy to invalidate but the
 * worker's materialized folders, which the version tells apart.
 */

/** The summary as stored in the index (times in epoch ms). */
interface StoredSummary {
  description: string;
  pinned: boolean;
  version: number;
  bytes: number;
  files: number;
  createdAt: number;
  updatedAt: number;
}

/** The tenant's limits, checked by every write. */
export interface SkillLimits {
  /** Skills a tenant may have (`TETHER_SKILLS_MAX_COUNT`). */
  maxCount: number;
  /** Bytes of every file of every skill of a tenant (`TETHER_SKILLS_MAX_BYTES`). */
  maxBytes: number;
  /** Files one skill may have. */
  maxFiles: number;
}

export interface SkillStoreOptions {
  redis: RedisClient;
  keys: TetherKeys;
  limits: SkillLimits;
}

/** Every skill of a tenant by name, with the tenant's version and bytes. */
export interface SkillIndex {
  skills: SkillSummary[];
  version: number;
  bytes: number;
}

/** Every file of every skill of a tenant, as one version had them. */
export interface SkillSnapshot {
  version: number;
  skills: { name: string; files: Record<string, string> }[];
}

/** How many times a snapshot is read again when a write came between its two reads. */
const SNAPSHOT_TRIES = 5;

function summaryOf(name: string, json: string): SkillSummary {
  const stored = JSON.parse(json) as StoredSummary;
  return {
    name,
    description: stored.description,
    pinned: stored.pinned === true,
    version: stored.version,
    bytes: stored.bytes,
    fileCount: stored.files,
    createdAt: new Date(stored.createdAt).toISOString(),
    updatedAt: new Date(stored.updatedAt).toISOString(),
  };
}

function check<T>(replies: [Error | null, unknown][] | null): T[] {
  if (replies === null) throw new Error('a Redis transaction was discarded');
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value as T;
  });
}

export class SkillStore {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly limits: Readonly<SkillLimits>;

  constructor(options: SkillStoreOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.limits = Object.freeze({ ...options.limits });
  }

  /** Every skill of the tenant, by name, with the tenant's version and bytes: one round trip. */
  async list(tenant: string): Promise<SkillIndex> {
    const keys = this.#keys.skills(tenant);
    const [index, totals] = check<unknown>(
      await this.#redis.multi().hgetall(keys.index).hmget(keys.totals, 'version', 'bytes').exec(),
    ) as [Record<string, string>, (string | null)[]];
    const skills = Object.entries(index)
      .map(([name, json]) => summaryOf(name, json))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { skills, version: Number(totals[0] ?? 0), bytes: Number(totals[1] ?? 0) };
  }

  /** The tenant's version: it changes with every write of any of its skills. */
  async version(tenant: string): Promise<number> {
    return Number((await this.#redis.hget(this.#keys.skills(tenant).totals, 'version')) ?? 0);
  }

  /** A skill and every file of it, or undefined. */
  async get(
    tenant: string,
    name: string,
  ): Promise<(SkillSummary & { files: Record<string, string> }) | undefined> {
    const keys = this.#keys.skills(tenant);
    const [json, files] = check<unknown>(
      await this.#redis.multi().hget(keys.index, name).hgetall(keys.files(name)).exec(),
    ) as [string | null, Record<string, string>];
    if (json === null) return undefined;
    return { ...summaryOf(name, json), files };
  }

  /** A skill's summary, its `SKILL.md`, and its files' paths and sizes (by path), or undefined. */
  async view(tenant: string, name: string): Promise<SkillView | undefined> {
    const keys = this.#keys.skills(tenant);
    const reply = await scripts.readSkill.run(this.#redis, {
      keys: { index: keys.index, files: keys.files(name) },
      args: { name },
    });
    if (reply === null) return undefined;
    const [json, skillMd, ...pairs] = reply;
    const files: SkillView['files'] = [];
    for (let i = 0; i < pairs.length; i += 2)
      files.push({ path: String(pairs[i]), bytes: Number(pairs[i + 1]) });
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { skill: summaryOf(name, json), skillMd, files };
  }

  /**
   * One file of a skill, with the skill's summary (its version, to change
   * the file with `ifVersion`): the content is `null` when the skill has no
   * such file; undefined when there is no skill.
   */
  async readFile(
    tenant: string,
    name: string,
    path: string,
  ): Promise<{ skill: SkillSummary; content: string | null } | undefined> {
    const keys = this.#keys.skills(tenant);
    const [json, content] = check<unknown>(
      await this.#redis.multi().hget(keys.index, name).hget(keys.files(name), path).exec(),
    ) as [string | null, string | null];
    return json === null ? undefined : { skill: summaryOf(name, json), content };
  }

  /**
   * Every file of every skill of the tenant as of one version: the names
   * first, then, in one transaction, every skill's files, the version and the
   * names again (read again when a write came in between).
   */
  async snapshot(tenant: string): Promise<SkillSnapshot> {
    const keys = this.#keys.skills(tenant);
    let names = (await this.#redis.hkeys(keys.index)).sort();
    for (let attempt = 1; ; attempt++) {
      const transaction = this.#redis.multi().hget(keys.totals, 'version').hkeys(keys.index);
      for (const name of names) transaction.hgetall(keys.files(name));
      const [version, now, ...files] = check<unknown>(await transaction.exec()) as [
        string | null,
        string[],
        ...Record<string, string>[],
      ];
      const current = now.sort();
      if (current.join('\n') === names.join('\n') || attempt === SNAPSHOT_TRIES) {
        if (current.join('\n') !== names.join('\n')) {
          throw new Error(`the skills of tenant ${tenant} kept changing while they were read`);
        }
        return {
          version: Number(version ?? 0),
          skills: names.map((name, i) => ({ name, files: files[i] ?? {} })),
        };
      }
      names = current;
    }
  }

  /** Writes a skill as `write` says, within the tenant's limits; refused, nothing changes. */
  async save(tenant: string, write: SkillWrite): Promise<SkillWriteResult> {
    const keys = this.#keys.skills(tenant);
    const set = Object.entries(write.set);
    const rest: string[] = [];
    for (const [path, content] of set) rest.push(path, content);
    rest.push(...(write.remove ?? []));
    const reply = await scripts.saveSkill.run(this.#redis, {
      keys: { index: keys.index, files: keys.files(write.name), totals: keys.totals },
      args: {
        name: write.name,
        mode: write.mode,
        description: write.description ?? '',
        byAgent: write.byAgent ? '1' : '0',
        pinned: write.pinned === undefined ? '' : write.pinned ? '1' : '0',
        ifVersion: write.ifVersion === undefined ? '' : String(write.ifVersion),
        maxCount: this.limits.maxCount,
        maxBytes: this.limits.maxBytes,
        maxFiles: this.limits.maxFiles,
        setCount: set.length,
        rest,
      },
    });
    switch (reply[0]) {
      case 'ok':
        return { ok: true, skill: summaryOf(write.name, reply[1]), created: reply[2] === 1 };
      case 'changed':
        return { ok: false, refusal: 'changed', version: Number(reply[1]) };
      case 'count':
      case 'bytes':
      case 'files':
        return { ok: false, refusal: reply[0], value: Number(reply[1]), max: Number(reply[2]) };
      case 'no_file':
        return { ok: false, refusal: 'no_file', path: String(reply[1]) };
      case 'clash':
        return { ok: false, refusal: 'clash', file: String(reply[1]), path: String(reply[2]) };
      default:
        return { ok: false, refusal: reply[0] };
    }
  }

  /** Deletes a skill; the agent (`byAgent`) cannot delete a pinned one. */
  async delete(
    tenant: string,
    name: string,
    options: { byAgent?: boolean } = {},
  ): Promise<'ok' | 'missing' | 'pinned'> {
    const keys = this.#keys.skills(tenant);
    return scripts.deleteSkill.run(this.#redis, {
      keys: { index: keys.index, files: keys.files(name), totals: keys.totals },
      args: { name, byAgent: options.byAgent ? '1' : '0' },
    });
  }
}
