import type * as Mcp from '@tether/mcp';
import type { McpServerSpec, McpToolset } from '@tether/mcp';
import type { McpHeaders } from '@tether/protocol';
import type { RunSpec } from '@tether/store/runs';
import type { RunContext } from '@tether/tools';
import type { AttemptContext } from './context.js';
import { McpListings } from './mcp-listings.js';

/**
 * A run's MCP servers, on the worker's side: each entry of its spec resolved
 * (a URL with its headers opened, a server the tenant registered, or one of
 * this worker's stdio servers), then listed and made tools for the attempt
 * (`@tether/mcp`'s `McpToolset`, closed when the attempt ends). `@tether/mcp`
 * (the MCP SDK, its HTTP client) is loaded by the first run that names a
 * server, not at the worker's start: it takes half a second to load on a busy
 * host, and most workers never need it.
 */

/** Opens sealed headers, or says why they cannot be. */
function openHeaders(
  mcp: typeof Mcp,
  ctx: AttemptContext,
  sealed: string | undefined,
  server: string,
): McpHeaders {
  const { McpToolsetError } = mcp;
  if (sealed === undefined) return {};
  const secrets = ctx.config.secrets;
  if (!secrets) {
    throw new McpToolsetError(
      'ERR_MCP_SECRETS',
      `The headers of MCP server ${server} are sealed, and this worker has no TETHER_SECRETS_KEY to open them: set the API's key on every worker.`,
    );
  }
  try {
    return JSON.parse(secrets.open(sealed)) as McpHeaders;
  } catch (error) {
    throw new McpToolsetError(
      'ERR_MCP_SECRETS',
      `The headers of MCP server ${server} could not be opened with this worker's TETHER_SECRETS_KEY: it is not the API's.`,
      { cause: error },
    );
  }
}

/** The tools both lists allow (a run's own list narrows a registered server's). */
function narrowed(
  server: readonly string[] | undefined,
  run: readonly string[] | undefined,
): readonly string[] | undefined {
  if (server === undefined) return run;
  if (run === undefined) return server;
  return run.filter((name) => server.includes(name));
}

/**
 * The servers of a run as `@tether/mcp` takes them: an entry with a URL as
 * it is (its headers opened); one with a name only, the tenant's registered
 * server of that name, else this worker's stdio server of that name.
 * @throws McpToolsetError `ERR_MCP_SERVER_UNKNOWN`, `ERR_MCP_SECRETS`
 */
export async function resolveMcpServers(
  mcp: typeof Mcp,
  ctx: AttemptContext,
  tenant: string,
  spec: RunSpec,
): Promise<McpServerSpec[]> {
  const entries = spec.mcpServers ?? [];
  const servers: McpServerSpec[] = [];
  for (const entry of entries) {
    const allowed = entry.allowedTools === undefined ? {} : { allowedTools: entry.allowedTools };
    if (entry.url !== undefined) {
      servers.push({
        name: entry.name,
        url: entry.url,
        headers: openHeaders(mcp, ctx, entry.sealedHeaders, entry.name),
        ...allowed,
      });
      continue;
    }
    const registered = await ctx.mcpServers?.get(tenant, entry.name);
    if (registered) {
      servers.push({
        name: entry.name,
        url: registered.url,
        headers: openHeaders(mcp, ctx, registered.sealedHeaders, entry.name),
        allowedTools: narrowed(registered.allowedTools, entry.allowedTools),
      });
      continue;
    }
    const stdio = ctx.config.mcpServers[entry.name];
    if (stdio) {
      servers.push({ name: entry.name, stdio, ...allowed });
      continue;
    }
    throw new mcp.McpToolsetError(
      'ERR_MCP_SERVER_UNKNOWN',
      `The run names the MCP server ${entry.name}, which its tenant has not registered (or has deleted) and which this worker does not have (TETHER_MCP_SERVERS).`,
    );
  }
  return servers;
}

/** The run's MCP servers listed and made tools, or undefined when it names none. */
export async function openMcpToolset(
  ctx: AttemptContext,
  tenant: string,
  spec: RunSpec,
  run: { context: RunContext; taken: Iterable<string> },
): Promise<McpToolset | undefined> {
  if (!spec.mcpServers || spec.mcpServers.length === 0) return undefined;
  const mcp = await import('@tether/mcp');
  const servers = await resolveMcpServers(mcp, ctx, tenant, spec);
  const { config } = ctx;
  return mcp.McpToolset.open(servers, {
    limits: {
      policy: { allowHttp: config.mcpAllowHttp, allowPrivate: config.mcpAllowPrivate },
      callTimeoutMs: config.mcpCallTimeoutMs,
      connectTimeoutMs: config.mcpConnectTimeoutMs,
      maxResponseBytes: config.mcpMaxResponseBytes,
    },
    cache: (ctx.mcpListings ?? new McpListings(0)).cache(mcp),
    context: run.context,
    taken: run.taken,
    logger: ctx.log,
  });
}
