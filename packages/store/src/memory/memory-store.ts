import {
  MEMORY_LIMITS,
  type MemoryDraft,
  type MemoryOldest,
  type MemoryRecord,
  type MemorySaveOutcome,
  newId,
} from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import type { MemoryKeys, TetherKeys } from '../redis/keys.js';
import { wellFormed } from '../redis/lua-script.js';
import * as scripts from './commands/scripts.js';
import { MemoryIndex } from './memory-index.js';

/**
 * Memory scopes in Redis. A scope (a tenant's, by name) is five keys under one
 * hash tag (keys.ts): its entries, their recency order, the digests of their
 * contents (for duplicates), its version and bytes, and a log of the last
 * changes. Saves, deletes and clears are Lua scripts that check the limits
 * and duplicates and change the version in the same step.
 *
 * Reads go through a copy of the scope held in this process (`MemoryIndex`:
 * the entries and a MiniSearch index), kept per scope for the most recently
 * used scopes. Each read asks Redis, in one round trip (`memoryChanges`),
 * what changed since the copy's version: usually nothing, or the few entries
 * saved since, which are applied one by one; only a copy too far behind (or
 * none yet) loads the whole scope. So a recall costs one small round trip and
 * a search in memory, and every process sees every write at once.
 */

export interface MemoryStoreOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** The most entries a scope holds (`TETHER_MEMORY_MAX_ENTRIES`). Default 1,000. */
  maxEntries?: number;
  /** The most bytes of entries (their stored JSON) a scope holds (`TETHER_MEMORY_MAX_BYTES`). Default 262,144 (256 KB). */
  maxBytes?: number;
  /** How many scopes this process keeps a copy of (least recently used go first). Default 32. */
  cachedScopes?: number;
}

/** How many of the oldest entries a refusal for a full scope lists. */
export const FULL_SCOPE_OLDEST = 5;
/** How many words of an entry the list of the oldest shows. */
const PREVIEW_WORDS = 12;

export const DEFAULT_MEMORY_MAX_ENTRIES = 1_000;
export const DEFAULT_MEMORY_MAX_BYTES = 256 * 1024;

/** A page of a scope: its entries from `offset`, the number that matched, and the scope's size. */
export interface MemoryListing {
  records: MemoryRecord[];
  /** Entries that matched the query (every entry for none). */
  matched: number;
  /** Entries in the scope. */
  total: number;
}

export class MemoryStore {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly #cachedScopes: number;
  /** Copies of scopes by `<tenant>\n<scope>`, least recently used first. */
  readonly #cache = new Map<string, MemoryIndex>();

  constructor(options: MemoryStoreOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.maxEntries = positive('maxEntries', options.maxEntries ?? DEFAULT_MEMORY_MAX_ENTRIES);
    this.maxBytes = positive('maxBytes', options.maxBytes ?? DEFAULT_MEMORY_MAX_BYTES);
    this.#cachedScopes = positive('cachedScopes', options.cachedScopes ?? 32);
  }

  /**
   * Saves an entry, or replaces `draft.replaces` (it keeps its id and
   * creation time). The content is stored as given (callers trim it and run
   * the guard); tags lose duplicates. Refused, nothing is written.
   */
  async save(tenant: string, scope: string, draft: MemoryDraft): Promise<MemorySaveOutcome> {
    if (draft.content.length === 0 || draft.content.length > MEMORY_LIMITS.contentMaxChars) {
      throw new RangeError(
        `memory content must be 1 to ${MEMORY_LIMITS.contentMaxChars} characters (got ${draft.content.length})`,
      );
    }
    // A lone surrogate (half of a UTF-16 pair) becomes U+FFFD: Redis's cjson refuses its escape, and
    // an entry it cannot read back could be neither replaced nor deleted.
    const content = wellFormed(draft.content);
    const tags = [...new Set((draft.tags ?? []).map(wellFormed))];
    const body = JSON.stringify({ content, tags }).slice(1, -1);
    const reply = await scripts.memorySave.run(this.#redis, {
      keys: this.#scope(tenant, scope),
      args: {
        id: newId('mem'),
        replaces: draft.replaces ?? '',
        content,
        body,
        maxEntries: this.maxEntries,
        maxBytes: this.maxBytes,
        oldest: FULL_SCOPE_OLDEST,
      },
    });
    switch (reply[0]) {
      case 'saved': {
        const [, id, createdAt, updatedAt] = reply;
        const record = {
          id,
          content,
          tags,
          createdAt: Number(createdAt),
          updatedAt: Number(updatedAt),
        };
        return { status: 'saved', record, replaced: draft.replaces !== undefined };
      }
      case 'duplicate':
      case 'missing':
        return { status: reply[0], id: reply[1] };
      case 'full': {
        const [, limit, ...pairs] = reply;
        const oldest: MemoryOldest[] = [];
        for (let i = 0; i < pairs.length; i += 2) {
          const json = pairs[i + 1];
          if (!json) continue;
          const record = JSON.parse(json) as MemoryRecord;
          oldest.push({ id: record.id, preview: preview(record.content), updatedAt: record.updatedAt });
        }
        return { status: 'full', limit, max: limit === 'entries' ? this.maxEntries : this.maxBytes, oldest };
      }
    }
  }

  /** Deletes an entry; false when the scope holds none with this id. */
  async delete(tenant: string, scope: string, id: string): Promise<boolean> {
    const deleted = await scripts.memoryDelete.run(this.#redis, {
      keys: this.#scope(tenant, scope),
      args: { id },
    });
    return deleted === 1;
  }

  /** Deletes every entry of the scope; how many there were. */
  async clear(tenant: string, scope: string): Promise<number> {
    return scripts.memoryClear.run(this.#redis, { keys: this.#scope(tenant, scope), args: {} });
  }

  /** The best `limit` entries for `query`, or the most recent for an empty one. */
  async recall(tenant: string, scope: string, query: string, limit: number): Promise<MemoryRecord[]> {
    return (await this.list(tenant, scope, { query, limit })).records;
  }

  /** A page of the scope: best first for a query, else newest first; `offset` entries skipped. */
  async list(
    tenant: string,
    scope: string,
    options: { query?: string | undefined; limit: number; offset?: number | undefined },
  ): Promise<MemoryListing> {
    const index = await this.#current(tenant, scope);
    const query = options.query?.trim() ?? '';
    const matching = query === '' ? index.recent() : index.search(query);
    const offset = options.offset ?? 0;
    return {
      records: matching.slice(offset, offset + options.limit),
      matched: matching.length,
      total: index.size,
    };
  }

  /**
   * The most recent entries that fit in `maxChars` together as the system
   * prompt shows them (each one's id, date and tags counted with its content),
   * for a run's system prompt; the one that crosses the budget is cut (`cut`),
   * and `more` counts the entries left out.
   */
  async recent(
    tenant: string,
    scope: string,
    maxChars: number,
  ): Promise<{ records: MemoryRecord[]; cut: boolean; more: number }> {
    const all = (await this.#current(tenant, scope)).recent();
    const records: MemoryRecord[] = [];
    let left = maxChars;
    let cut = false;
    for (const record of all) {
      const header = promptHeaderChars(record);
      if (left <= header) {
        cut = records.length === 0 && left > 0;
        break;
      }
      if (header + record.content.length <= left) {
        records.push(record);
        left -= header + record.content.length;
        continue;
      }
      records.push({ ...record, content: record.content.slice(0, left - header) });
      cut = true;
      break;
    }
    return { records, cut, more: all.length - records.length };
  }

  #scope(tenant: string, scope: string): MemoryKeys {
    return this.#keys.memory(tenant, scope);
  }

  /** This process's copy of the scope, brought up to date in one round trip. */
  async #current(tenant: string, scope: string): Promise<MemoryIndex> {
    const cacheKey = `${tenant}\n${scope}`;
    let index = this.#cache.get(cacheKey);
    if (index) this.#cache.delete(cacheKey);
    index ??= new MemoryIndex();
    this.#cache.set(cacheKey, index);
    while (this.#cache.size > this.#cachedScopes) {
      const oldest = this.#cache.keys().next().value as string;
      this.#cache.delete(oldest);
    }
    const keys = this.#scope(tenant, scope);
    const reply = await scripts.memoryChanges.run(this.#redis, {
      keys: { entries: keys.entries, meta: keys.meta, log: keys.log },
      args: { since: index.version },
    });
    const [version, kind, ...pairs] = reply;
    if (kind === undefined) return index;
    // Another read of this process brought the copy further meanwhile; but a scope whose version went
    // back (its keys deleted or restored) is taken as it is now, whatever the copy holds.
    if (kind !== 'reset' && version <= index.version) return index;
    if (kind === 'all' || kind === 'reset') {
      const records: MemoryRecord[] = [];
      for (let i = 1; i < pairs.length; i += 2) records.push(JSON.parse(pairs[i] as string) as MemoryRecord);
      index.reset(records);
    } else {
      for (let i = 0; i < pairs.length; i += 2) {
        const json = pairs[i + 1];
        if (json) index.upsert(JSON.parse(json) as MemoryRecord);
        else index.remove(pairs[i] as string);
      }
    }
    index.version = version;
    return index;
  }
}

/**
 * What the system prompt adds around an entry's content: `[<id>] <date>
 * (<tags>)`, a line break, and the blank line before the next.
 */
function promptHeaderChars(record: MemoryRecord): number {
  const tags = record.tags.length > 0 ? record.tags.join(', ').length + 3 : 0;
  return record.id.length + 14 + tags + 2;
}

/** The first words of an entry, on one line. */
export function preview(content: string): string {
  const words = content.split(/\s+/).filter((word) => word !== '');
  const head = words.slice(0, PREVIEW_WORDS).join(' ');
  const short = head.length > 120 ? `${head.slice(0, 120)}…` : head;
  return words.length > PREVIEW_WORDS && !short.endsWith('…') ? `${short}…` : short;
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer (got ${value})`);
  return value;
}
