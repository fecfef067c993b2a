import type { CreateMcpServerBody, McpServer, McpServerList } from '@tether/protocol';
import { invalidOption, isRecord, TetherProtocolError } from './errors.js';
import type { RequestOptions, RequestSpec } from './request.js';

/** What the MCP servers API needs of the client that owns it. */
export interface McpServerTransport {
  /** One request under the client's retry policy, its JSON body parsed (undefined when empty). */
  json(spec: RequestSpec): Promise<unknown>;
}

/**
 * `client.mcpServers`: the remote MCP servers the tenant registers once, for
 * its runs to name in `mcpServers` by name alone. Headers are sent once and
 * never shown again (a server shows their names only).
 *
 * ```ts
 * await client.mcpServers.register({ name: 'docs', url: 'https://docs.example.com/mcp', headers: { Authorization: `Bearer ${token}` } });
 * await client.runs.submit({ input: 'Find the release notes', mcpServers: [{ name: 'docs' }] });
 * ```
 */
export class TetherMcpServers {
  readonly #transport: McpServerTransport;

  constructor(transport: McpServerTransport) {
    this.#transport = transport;
  }

  /** `GET /v1/mcp-servers`: the tenant's servers, its limit, and the operator's stdio servers' names. */
  async list(options: RequestOptions = {}): Promise<McpServerList> {
    const result = await this.#transport.json({
      method: 'GET',
      path: '/v1/mcp-servers',
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as McpServerList;
    throw new TetherProtocolError('GET /v1/mcp-servers answered without a data array');
  }

  /** `GET /v1/mcp-servers/:name` (`TetherNotFoundError` when there is none). */
  async get(name: string, options: RequestOptions = {}): Promise<McpServer> {
    const path = serverPath(name);
    const result = await this.#transport.json({
      method: 'GET',
      path,
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && typeof result.url === 'string') return result as unknown as McpServer;
    throw new TetherProtocolError(`GET ${path} answered without a url`);
  }

  /**
   * `POST /v1/mcp-servers`: registers the server, or replaces the tenant's
   * server of that name. A refused URL is a `TetherApiError` `ERR_URL_REFUSED`;
   * the tenant's limit a `TetherConflictError` (`ERR_MCP_SERVERS_LIMIT`).
   */
  async register(body: CreateMcpServerBody, options: RequestOptions = {}): Promise<McpServer> {
    const result = await this.#transport.json({
      method: 'POST',
      path: '/v1/mcp-servers',
      body,
      signal: options.signal,
      // The same server again is the same registration.
      idempotent: true,
    });
    if (isRecord(result) && typeof result.url === 'string') return result as unknown as McpServer;
    throw new TetherProtocolError('POST /v1/mcp-servers answered without a url');
  }

  /** `DELETE /v1/mcp-servers/:name` (`TetherNotFoundError` when there is none). */
  async delete(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.json({
      method: 'DELETE',
      path: serverPath(name),
      signal: options.signal,
      // Sent again after a lost connection, a delete that happened would answer 404.
      idempotent: false,
    });
  }
}

function serverPath(name: string): string {
  if (typeof name !== 'string' || name === '')
    throw invalidOption('MCP server name must be a non-empty string');
  return `/v1/mcp-servers/${encodeURIComponent(name)}`;
}
