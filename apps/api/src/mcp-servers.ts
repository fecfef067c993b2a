/**
 * MCP servers at the API: the checks a server's URL and headers pass (at
 * submit and at registration), and the sealing of its headers before they
 * are stored. The URL rules are `@tether/outbound`'s (https only unless
 * `TETHER_MCP_ALLOW_HTTP`, no private addresses unless
 * `TETHER_MCP_ALLOW_PRIVATE`, metadata addresses never); what the URL
 * resolves to is checked again by the worker at each connection.
 */
import type { SecretBox } from '@tether/config';
import { checkOutboundUrl, OutboundError } from '@tether/outbound';
import {
  type ClientTool,
  MCP_LIMITS,
  MCP_TOOL_SEPARATOR,
  type McpHeaders,
  type McpServerRef,
  type SealedMcpServerRef,
} from '@tether/protocol';
import type { McpServerStore } from '@tether/store/mcp-servers';
import type { ApiConfig } from './config.js';
import { ApiError } from './errors.js';

/** Headers the MCP client sets itself (the transport's and HTTP's own): a server's headers may not. */
const RESERVED_HEADERS = new Set([
  'accept',
  'connection',
  'content-length',
  'content-type',
  'host',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'transfer-encoding',
]);

/** The URL of a server, checked: `ERR_URL_REFUSED` naming `where`, else the URL. */
export function checkServerUrl(
  url: string,
  where: string,
  config: Pick<ApiConfig, 'mcpAllowHttp' | 'mcpAllowPrivate'>,
): string {
  try {
    return checkOutboundUrl(url, { allowHttp: config.mcpAllowHttp, allowPrivate: config.mcpAllowPrivate })
      .href;
  } catch (error) {
    if (error instanceof OutboundError) {
      throw new OutboundError(error.code, `${where}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** What is wrong with a server's headers (names the client sets, the bytes together), or undefined. */
export function headersProblem(headers: McpHeaders, where: string): string | undefined {
  const seen = new Set<string>();
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      return `${where}: the header ${JSON.stringify(name)} is set by the MCP client itself; leave it out.`;
    }
    if (seen.has(lower))
      return `${where}: the header ${JSON.stringify(name)} is given twice (names ignore case).`;
    seen.add(lower);
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
  }
  if (bytes > MCP_LIMITS.headersMaxBytes) {
    return `${where}: the headers take ${bytes} bytes, more than the ${MCP_LIMITS.headersMaxBytes} allowed.`;
  }
  return undefined;
}

/** The headers as stored: sealed JSON, or 503 `ERR_SECRETS_KEY_MISSING` when there is no key. */
export function sealHeaders(headers: McpHeaders, secrets: SecretBox | undefined): string {
  if (!secrets) {
    throw new ApiError(
      'ERR_SECRETS_KEY_MISSING',
      'MCP server headers are secrets stored sealed, and this server has no key to seal them: set TETHER_SECRETS_KEY (e.g. `openssl rand -base64 32`), the same on every API and worker.',
    );
  }
  return secrets.seal(JSON.stringify(headers));
}

/**
 * What a run's `mcpServers` and client tools cannot be, told at submit
 * (400 `ERR_MCP_SERVERS_INVALID`, `ERR_CLIENT_TOOLS_INVALID`): a name given
 * twice, headers without a URL, headers the client sets or too many bytes of
 * them, a client tool named `<server>__…` after one of the servers.
 */
export function checkMcpServerRefs(
  servers: readonly McpServerRef[],
  tools: readonly ClientTool[] = [],
): void {
  const names = new Set<string>();
  for (const [index, server] of servers.entries()) {
    const where = `mcpServers[${index}] (${server.name})`;
    if (names.has(server.name)) {
      throw new ApiError('ERR_MCP_SERVERS_INVALID', `${where}: the name ${server.name} is given twice.`);
    }
    names.add(server.name);
    if (server.headers !== undefined) {
      if (server.url === undefined) {
        throw new ApiError(
          'ERR_MCP_SERVERS_INVALID',
          `${where}: headers go with a url; a registered server sends the headers it was registered with.`,
        );
      }
      const problem = headersProblem(server.headers, where);
      if (problem) throw new ApiError('ERR_MCP_SERVERS_INVALID', problem);
    }
  }
  for (const tool of tools) {
    const at = tool.name.indexOf(MCP_TOOL_SEPARATOR);
    const server = at < 0 ? undefined : tool.name.slice(0, at);
    if (server !== undefined && names.has(server)) {
      throw new ApiError(
        'ERR_CLIENT_TOOLS_INVALID',
        `tools: ${JSON.stringify(tool.name)} would clash with the tools of MCP server ${server}, which the model sees as ${server}${MCP_TOOL_SEPARATOR}<tool>; give the client tool another name.`,
      );
    }
  }
}

/**
 * A run's `mcpServers` ready to store: every URL checked, a name-only entry
 * known (a server the tenant registered, or an operator's stdio server), and
 * the headers sealed. The rest of the body is left as it is.
 */
export async function sealMcpServers<T extends { mcpServers?: McpServerRef[] | undefined }>(
  body: T,
  tenant: string,
  deps: {
    config: Pick<ApiConfig, 'mcpAllowHttp' | 'mcpAllowPrivate' | 'mcpServers' | 'secrets'>;
    registered: Pick<McpServerStore, 'list'>;
  },
): Promise<Omit<T, 'mcpServers'> & { mcpServers?: SealedMcpServerRef[] }> {
  const { mcpServers, ...rest } = body;
  if (mcpServers === undefined) return rest;
  const { config } = deps;
  const needsLookup = mcpServers.some((server) => server.url === undefined);
  const registered = needsLookup
    ? new Set((await deps.registered.list(tenant)).map((s) => s.name))
    : undefined;
  const sealed = mcpServers.map((server, index): SealedMcpServerRef => {
    const where = `mcpServers[${index}] (${server.name})`;
    if (server.url === undefined) {
      if (!registered?.has(server.name) && !Object.hasOwn(config.mcpServers, server.name)) {
        throw new ApiError(
          'ERR_MCP_SERVERS_INVALID',
          `${where}: there is no MCP server named ${server.name}: neither one the tenant registered (POST /v1/mcp-servers) nor one of the operator's. Register it, or give its url.`,
        );
      }
      return { name: server.name, ...(server.allowedTools ? { allowedTools: server.allowedTools } : {}) };
    }
    return {
      name: server.name,
      url: checkServerUrl(server.url, `${where}.url`, config),
      ...(server.headers && Object.keys(server.headers).length > 0
        ? { sealedHeaders: sealHeaders(server.headers, config.secrets) }
        : {}),
      ...(server.allowedTools ? { allowedTools: server.allowedTools } : {}),
    };
  });
  return { ...rest, mcpServers: sealed };
}
