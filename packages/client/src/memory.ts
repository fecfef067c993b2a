import type { ClearMemoryResponse, CreateMemoryBody, MemoryEntry, MemoryPage } from '@tether/protocol';
import { invalidOption, isRecord, TetherProtocolError } from './errors.js';
import type { RequestOptions, RequestSpec } from './request.js';

export interface MemoryListOptions extends RequestOptions {
  /** Words to look for: best matches first (otherwise newest first). */
  query?: string;
  /** 1 to 200 (the server's default is 20). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** What the memory API needs of the client that owns it. */
export interface MemoryTransport {
  /** One request under the client's retry policy, its JSON body parsed (undefined when empty). */
  json(spec: RequestSpec): Promise<unknown>;
}

/**
 * `client.memory`: what runs saved for later runs, per scope (`/v1/memory`).
 *
 * ```ts
 * await client.memory.add('user-42', { content: 'The user prefers pnpm.', tags: ['tools'] });
 * const { data } = await client.memory.list('user-42', { query: 'pnpm' });
 * await client.memory.delete('user-42', data[0].id);
 * ```
 */
export class TetherMemory {
  readonly #transport: MemoryTransport;

  constructor(transport: MemoryTransport) {
    this.#transport = transport;
  }

  /** `GET /v1/memory/:scope`: one page, newest first, or best first with `query`. */
  async list(scope: string, options: MemoryListOptions = {}): Promise<MemoryPage> {
    if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0)) {
      throw invalidOption(`memory.list limit must be an integer > 0 (got ${options.limit})`);
    }
    const path = scopePath(scope);
    const result = await this.#transport.json({
      method: 'GET',
      path,
      query: { q: options.query, limit: options.limit, cursor: options.cursor },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as MemoryPage;
    throw new TetherProtocolError(`GET ${path} answered without a data array`);
  }

  /**
   * `POST /v1/memory/:scope`: adds an entry. The server's content guard refuses
   * instructions and secrets (`ERR_MEMORY_REFUSED`); a duplicate or a full
   * scope is a `TetherConflictError`.
   */
  async add(scope: string, body: CreateMemoryBody, options: RequestOptions = {}): Promise<MemoryEntry> {
    const path = scopePath(scope);
    const result = await this.#transport.json({
      method: 'POST',
      path,
      body,
      signal: options.signal,
      // Not sent again: an add that was stored would answer 409 ERR_MEMORY_DUPLICATE the second time.
      idempotent: false,
    });
    if (isRecord(result) && typeof result.id === 'string') return result as unknown as MemoryEntry;
    throw new TetherProtocolError(`POST ${path} answered without an entry id`);
  }

  /** `DELETE /v1/memory/:scope/:id`; an unknown entry is a `TetherNotFoundError`. */
  async delete(scope: string, id: string, options: RequestOptions = {}): Promise<void> {
    if (typeof id !== 'string' || id === '')
      throw invalidOption('memory entry id must be a non-empty string');
    await this.#transport.json({
      method: 'DELETE',
      path: `${scopePath(scope)}/${encodeURIComponent(id)}`,
      signal: options.signal,
      // Sent again after a lost connection, a delete that happened would answer 404.
      idempotent: false,
    });
  }

  /** `DELETE /v1/memory/:scope`: every entry of the scope; how many there were. */
  async clear(scope: string, options: RequestOptions = {}): Promise<ClearMemoryResponse> {
    const path = scopePath(scope);
    const result = await this.#transport.json({
      method: 'DELETE',
      path,
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && typeof result.deleted === 'number')
      return result as unknown as ClearMemoryResponse;
    throw new TetherProtocolError(`DELETE ${path} answered without a count`);
  }
}

function scopePath(scope: string): string {
  if (typeof scope !== 'string' || scope === '')
    throw invalidOption('memory scope must be a non-empty string');
  return `/v1/memory/${encodeURIComponent(scope)}`;
}
