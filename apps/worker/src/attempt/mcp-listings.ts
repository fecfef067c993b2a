import type * as Mcp from '@tether/mcp';
import type { ListingCache } from '@tether/mcp';

/** The tool listings this worker process keeps (`TETHER_MCP_LIST_TTL_MS`), shared by its runs, made at the first. */
export class McpListings {
  readonly ttlMs: number;
  #cache: ListingCache | undefined;

  constructor(ttlMs: number) {
    this.ttlMs = ttlMs;
  }

  cache(mcp: typeof Mcp): ListingCache {
    this.#cache ??= new mcp.ListingCache({ ttlMs: this.ttlMs });
    return this.#cache;
  }
}
