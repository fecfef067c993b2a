import type { McpServer } from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import { luaJson } from '../redis/lua-script.js';
import * as scripts from './commands/scripts.js';

/**
 * The MCP servers a tenant registered (`/v1/mcp-servers`), in one hash under
 * the tenant's hash tag: name → the server as JSON. Headers are stored sealed
 * (the caller seals them; this store never sees them in the clear) with their
 * names beside, which the API shows. A write is a script that checks the
 * tenant's limit in the same step.
 */

/** A registered server as the worker needs it: the sealed headers included. */
export interface StoredMcpServer {
  name: string;
  url: string;
  /** The headers as JSON, sealed (`SecretBox`); absent when the server has none. */
  sealedHeaders?: string | undefined;
  headerNames: string[];
  allowedTools?: string[] | undefined;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
}

/** What a registration writes. */
export type McpServerWrite = Omit<StoredMcpServer, 'createdAt' | 'updatedAt'>;

export interface McpServerStoreOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** Servers a tenant may register (`TETHER_MCP_MAX_SERVERS`). */
  maxServers: number;
}

export class McpServerStore {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly maxServers: number;

  constructor(options: McpServerStoreOptions) {
    if (!Number.isSafeInteger(options.maxServers) || options.maxServers < 0) {
      throw new RangeError(
        `McpServerStore option "maxServers" must be an integer >= 0, got ${options.maxServers}`,
      );
    }
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.maxServers = options.maxServers;
  }

  /** Every server of the tenant, by name. */
  async list(tenant: string): Promise<StoredMcpServer[]> {
    const all = await this.#redis.hgetall(this.#keys.mcpServers(tenant));
    return Object.entries(all)
      .map(([name, json]) => parseServer(name, json))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** One server of the tenant, or undefined. */
  async get(tenant: string, name: string): Promise<StoredMcpServer | undefined> {
    const json = await this.#redis.hget(this.#keys.mcpServers(tenant), name);
    return json === null ? undefined : parseServer(name, json);
  }

  /**
   * Registers a server, or replaces the tenant's server of that name (its
   * creation time kept); `{ full }` when the tenant has {@link maxServers}
   * already and this one is new.
   */
  async save(
    tenant: string,
    server: McpServerWrite,
  ): Promise<{ created: boolean; server: StoredMcpServer } | { full: number }> {
    const { name, ...rest } = server;
    const reply = await scripts.saveMcpServer.run(this.#redis, {
      keys: { servers: this.#keys.mcpServers(tenant) },
      args: { name, server: luaJson(rest), max: String(this.maxServers) },
    });
    if (reply[0] === 'full') return { full: Number(reply[1]) };
    return { created: reply[0] === 'created', server: parseServer(name, reply[1]) };
  }

  /** Deletes a server of the tenant; false when it has none of that name. */
  async delete(tenant: string, name: string): Promise<boolean> {
    return (await this.#redis.hdel(this.#keys.mcpServers(tenant), name)) === 1;
  }
}

/** A stored server as the API shows it: the names of its headers, never their values. */
export function mcpServerView(server: StoredMcpServer): McpServer {
  return {
    name: server.name,
    url: server.url,
    headerNames: server.headerNames,
    ...(server.allowedTools === undefined ? {} : { allowedTools: server.allowedTools }),
    createdAt: new Date(server.createdAt).toISOString(),
    updatedAt: new Date(server.updatedAt).toISOString(),
  };
}

function parseServer(name: string, json: string): StoredMcpServer {
  const stored = JSON.parse(json) as Partial<StoredMcpServer>;
  // Lua's cjson writes an empty array as {}: arrays are read back as arrays.
  const list = (value: unknown): string[] => (Array.isArray(value) ? (value as string[]) : []);
  return {
    name,
    url: String(stored.url),
    ...(typeof stored.sealedHeaders === 'string' ? { sealedHeaders: stored.sealedHeaders } : {}),
    headerNames: list(stored.headerNames),
    ...(stored.allowedTools === undefined ? {} : { allowedTools: list(stored.allowedTools) }),
    createdAt: Number(stored.createdAt),
    updatedAt: Number(stored.updatedAt),
  };
}
