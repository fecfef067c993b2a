import type {
  ClearMemoryResponse,
  CreateMemoryBody,
  MemoryEntry,
  MemoryPage,
  MemoryRecord,
} from '@tether/protocol';
import { QueueError } from '../errors.js';
import type { MemoryStore } from './memory-store.js';

export interface MemoryServiceOptions {
  store: MemoryStore;
  /**
   * The content guard (`guardContent` of `@tether/tools`, which this package
   * does not depend on): what people add passes the checks the agent's saves do.
   */
  guard: (text: string) => { ok: true } | { ok: false; reason: string };
}

/**
 * What the API does with memory: list (newest first, or best first for a
 * query), add, delete one entry, clear a scope. Every call names the tenant:
 * a scope of another tenant is another set of keys, so it is never seen.
 */
export class MemoryService {
  readonly #store: MemoryStore;
  readonly #guard: MemoryServiceOptions['guard'];

  constructor(options: MemoryServiceOptions) {
    this.#store = options.store;
    this.#guard = options.guard;
  }

  /** A page: `cursor` is the offset of its first entry (from 0). */
  async list(
    tenant: string,
    scope: string,
    options: { query?: string | undefined; limit: number; cursor?: string | undefined },
  ): Promise<MemoryPage> {
    const offset = options.cursor ? Number(options.cursor) : 0;
    const listing = await this.#store.list(tenant, scope, {
      query: options.query,
      limit: options.limit,
      offset,
    });
    const next = offset + listing.records.length;
    return {
      scope,
      data: listing.records.map(memoryEntry),
      total: listing.total,
      nextCursor: next < listing.matched ? String(next) : null,
    };
  }

  /** Adds an entry; refused by the guard (`ERR_MEMORY_REFUSED`), as a duplicate or for a full scope. */
  async add(tenant: string, scope: string, body: CreateMemoryBody): Promise<MemoryEntry> {
    const content = body.content.trim();
    const tags = [...new Set((body.tags ?? []).map((tag) => tag.trim()))];
    if (content === '' || tags.includes('')) {
      throw new QueueError(
        'ERR_MEMORY_REFUSED',
        'The content and each tag must have a character other than spaces.',
      );
    }
    for (const text of [content, tags.join('\n')]) {
      const verdict = this.#guard(text);
      if (!verdict.ok) throw new QueueError('ERR_MEMORY_REFUSED', verdict.reason);
    }
    const outcome = await this.#store.save(tenant, scope, { content, tags });
    switch (outcome.status) {
      case 'saved':
        return memoryEntry(outcome.record);
      case 'duplicate':
        throw new QueueError(
          'ERR_MEMORY_DUPLICATE',
          `Scope ${scope} holds this content already, as ${outcome.id}.`,
        );
      case 'missing':
        throw new QueueError('ERR_MEMORY_NOT_FOUND', `No memory entry ${outcome.id} in scope ${scope}.`);
      case 'full': {
        const limit =
          outcome.limit === 'entries'
            ? `${outcome.max} entries (TETHER_MEMORY_MAX_ENTRIES)`
            : `${outcome.max} bytes (TETHER_MEMORY_MAX_BYTES)`;
        const oldest = outcome.oldest.map((entry) => `${entry.id} (${entry.preview})`).join('; ');
        throw new QueueError(
          'ERR_MEMORY_FULL',
          `Scope ${scope} is full: it may hold ${limit}. Delete an entry first; the oldest: ${oldest}.`,
        );
      }
    }
  }

  /** Deletes an entry, or `ERR_MEMORY_NOT_FOUND`. */
  async remove(tenant: string, scope: string, id: string): Promise<void> {
    if (!(await this.#store.delete(tenant, scope, id))) {
      throw new QueueError('ERR_MEMORY_NOT_FOUND', `No memory entry ${id} in scope ${scope}.`);
    }
  }

  /** Deletes every entry of the scope. */
  async clear(tenant: string, scope: string): Promise<ClearMemoryResponse> {
    return { deleted: await this.#store.clear(tenant, scope) };
  }
}

/** An entry as the API shows it (ISO 8601 times). */
export function memoryEntry(record: MemoryRecord): MemoryEntry {
  return {
    id: record.id,
    content: record.content,
    tags: record.tags,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
  };
}
