/** One tool as an MCP server lists it (what Tether uses of it). */
export interface McpToolInfo {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/**
 * Tool listings of MCP servers, kept per worker process for `ttlMs` so that a
 * run's start need not connect to a server listed moments ago. Keyed by what
 * identifies the server and what it may show (its URL and headers, or the
 * operator's server name); the oldest entries go past `maxEntries`.
 */
export class ListingCache {
  readonly #entries = new Map<string, { tools: McpToolInfo[]; expiresAt: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { ttlMs: number; maxEntries?: number; now?: () => number }) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries ?? 1_000;
    this.#now = options.now ?? Date.now;
  }

  /** The listing, while it is fresh. */
  get(key: string): McpToolInfo[] | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.tools;
  }

  set(key: string, tools: McpToolInfo[]): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { tools, expiresAt: this.#now() + this.#ttlMs });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  /** Forgets a server's listing (it answered that a tool is unknown, or could not be reached). */
  delete(key: string): void {
    this.#entries.delete(key);
  }
}
