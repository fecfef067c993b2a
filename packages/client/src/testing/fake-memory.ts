/**
 * The memory routes of the fake API (`/v1/memory/:scope`), in memory: enough
 * of the contract for the SDK and the CLI (pages newest first, a substring
 * query, 201, 404, 409 for a duplicate, the clear's count). Test-only.
 */
import type { ServerResponse } from 'node:http';
import type { MemoryEntry } from '@tether/protocol';

export class FakeMemory {
  /** Entries by `<tenant>/<scope>`, oldest first. */
  readonly scopes = new Map<string, MemoryEntry[]>();
  #seq = 0;

  /** Answers a memory route (`parts` after `v1/memory`), or returns false for another route. */
  handle(
    method: string,
    parts: readonly string[],
    url: URL,
    body: unknown,
    tenant: string,
    res: ServerResponse,
  ): boolean {
    const [scope, id] = parts;
    if (scope === undefined || parts.length > 2) return false;
    const key = `${tenant}/${scope}`;
    const entries = this.scopes.get(key) ?? [];
    this.scopes.set(key, entries);
    if (method === 'GET' && id === undefined) {
      const q = url.searchParams.get('q')?.toLowerCase() ?? '';
      const limit = Number(url.searchParams.get('limit') ?? '20');
      const offset = Number(url.searchParams.get('cursor') ?? '0');
      const matching = [...entries].reverse().filter((entry) => entry.content.toLowerCase().includes(q));
      const data = matching.slice(offset, offset + limit);
      const next = offset + data.length;
      send(res, 200, {
        scope,
        data,
        total: entries.length,
        nextCursor: next < matching.length ? String(next) : null,
      });
      return true;
    }
    if (method === 'POST' && id === undefined) {
      const { content, tags = [] } = body as { content: string; tags?: string[] };
      const same = entries.find((entry) => entry.content === content.trim());
      if (same) {
        send(res, 409, {
          error: {
            code: 'ERR_MEMORY_DUPLICATE',
            message: `Scope ${scope} holds this content already, as ${same.id}.`,
          },
        });
        return true;
      }
      const at = new Date(Date.UTC(2025, 0, 1, 0, 0, ++this.#seq)).toISOString();
      const entry = {
        id: `mem_${String(this.#seq).padStart(26, '0')}`,
        content: content.trim(),
        tags,
        createdAt: at,
        updatedAt: at,
      };
      entries.push(entry);
      send(res, 201, entry);
      return true;
    }
    if (method === 'DELETE' && id !== undefined) {
      const index = entries.findIndex((entry) => entry.id === id);
      if (index < 0) {
        send(res, 404, {
          error: { code: 'ERR_MEMORY_NOT_FOUND', message: `No memory entry ${id} in scope ${scope}.` },
        });
        return true;
      }
      entries.splice(index, 1);
      res.writeHead(204).end();
      return true;
    }
    if (method === 'DELETE') {
      send(res, 200, { deleted: entries.splice(0).length });
      return true;
    }
    return false;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
