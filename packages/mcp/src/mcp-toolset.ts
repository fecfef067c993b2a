/**
 * A run's MCP servers as tools, for one attempt. At the start every server
 * is listed (from the worker's {@link ListingCache} when it is fresh, else
 * through a connection kept for the attempt's calls), and its tools (those
 * `allowedTools` names, when given) become {@link Tool}s named
 * `<server>__<tool>` with the server's own descriptions and schemas. A call
 * connects when there is no connection yet (an operator's stdio server is
 * started in the run's sandbox at its first use), and ends with the server's
 * result, or a tool error the model can act on: the server's own error, the
 * timeout, the cap, a connection lost. {@link McpToolset.close} ends every
 * connection and stops every stdio server, at the attempt's end.
 */
import { createHash } from 'node:crypto';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { OutboundError } from '@tether/outbound';
import type { StdioServerConfig } from '@tether/protocol';
import {
  jsonSchemaArguments,
  type RunContext,
  startSandboxedServer,
  type Tool,
  type ToolLogger,
  type ToolResult,
} from '@tether/tools';
import {
  connectRemote,
  connectTransport,
  type McpConnection,
  type McpLimits,
  message,
} from './connection.js';
import { McpToolsetError } from './errors.js';
import type { ListingCache, McpToolInfo } from './listing-cache.js';
import { formatCallResult } from './result.js';
import { SandboxStdioTransport } from './stdio-transport.js';
import { modelToolName } from './tool-names.js';

/** A server of a run, resolved by the worker: remote (URL and opened headers) or an operator's stdio server. */
export type McpServerSpec = { name: string; allowedTools?: readonly string[] | undefined } & (
  | { url: string; headers: Readonly<Record<string, string>> }
  | { stdio: StdioServerConfig }
);

export interface McpToolsetOptions {
  limits: McpLimits;
  /** The worker's listings, shared by its runs. */
  cache: ListingCache;
  /** The run's tool context: where a stdio server starts (its sandbox, its workspace), and the run's cancel. */
  context: RunContext;
  /** Tool names the run has already (its built-in and client tools): an MCP tool never takes one. */
  taken: Iterable<string>;
  logger?: ToolLogger | undefined;
}

/** Pages of `tools/list` read at most, and characters of a description kept. */
const MAX_LIST_PAGES = 20;
const DESCRIPTION_MAX = 4_000;

/** One server of the attempt: its listing's key, and its connection once made. */
class ServerHandle {
  readonly spec: McpServerSpec;
  readonly key: string;
  readonly #options: McpToolsetOptions;
  #connection: Promise<McpConnection> | undefined;
  #closed = false;

  constructor(spec: McpServerSpec, options: McpToolsetOptions) {
    this.spec = spec;
    this.#options = options;
    this.key = listingKey(spec);
  }

  /** The connection: the one made before while it is open, else a new one. */
  async connection(): Promise<McpConnection> {
    if (this.#closed) throw new Error('the attempt is over');
    const current = this.#connection;
    if (current) {
      const open = await current.catch(() => undefined);
      if (open && !open.closed) return open;
    }
    const made = this.#connect();
    this.#connection = made;
    made.catch(() => {
      if (this.#connection === made) this.#connection = undefined;
    });
    return made;
  }

  #connect(): Promise<McpConnection> {
    const { limits, context } = this.#options;
    const spec = this.spec;
    if ('url' in spec) return connectRemote(spec.url, spec.headers, limits, context.signal);
    const label = `the MCP server ${spec.name}`;
    const transport = new SandboxStdioTransport(() => startSandboxedServer(context, spec.stdio, label), {
      maxMessageBytes: limits.maxResponseBytes,
      name: spec.name,
    });
    return connectTransport(transport, limits, context.signal).catch((error: unknown) => {
      const stderr = transport.stderr.trim();
      throw stderr === ''
        ? error
        : new Error(`${message(error)} (its stderr: ${stderr.slice(-500)})`, { cause: error });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const connection = await this.#connection?.catch(() => undefined);
    await connection?.close();
  }
}

/** What identifies a server's listing: its URL and headers (hashed), or the operator's name. */
function listingKey(spec: McpServerSpec): string {
  if ('stdio' in spec) return `stdio:${spec.name}`;
  const headers = Object.entries(spec.headers)
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1));
  return `url:${createHash('sha256')
    .update(JSON.stringify([spec.url, headers]))
    .digest('hex')}`;
}

async function listTools(
  connection: McpConnection,
  limits: McpLimits,
  signal: AbortSignal,
): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const listed = await connection.client.listTools(cursor === undefined ? {} : { cursor }, {
      timeout: limits.connectTimeoutMs,
      // A signal of its own per request: the SDK never removes the listener it adds to it.
      signal: AbortSignal.any([signal]),
    });
    for (const tool of listed.tools) {
      tools.push({
        name: tool.name,
        description: tool.description ?? tool.title,
        inputSchema: tool.inputSchema as Record<string, unknown>,
      });
    }
    cursor = listed.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}

export class McpToolset {
  /** The tools offered to the model, server by server. */
  readonly tools: Tool[];
  readonly #handles: ServerHandle[];

  private constructor(tools: Tool[], handles: ServerHandle[]) {
    this.tools = tools;
    this.#handles = handles;
  }

  /**
   * Lists every server (in parallel) and makes its tools.
   * @throws McpToolsetError `ERR_MCP_SERVER_UNAVAILABLE` naming the server that could not be
   *   connected to or listed (every connection made is closed first)
   */
  static async open(servers: readonly McpServerSpec[], options: McpToolsetOptions): Promise<McpToolset> {
    const handles = servers.map((spec) => new ServerHandle(spec, options));
    const { limits, cache, context } = options;
    const listings = await Promise.allSettled(
      handles.map(async (handle) => {
        const cached = cache.get(handle.key);
        if (cached) return cached;
        const connection = await handle.connection();
        const tools = await listTools(connection, limits, context.signal);
        cache.set(handle.key, tools);
        return tools;
      }),
    );
    const failed = listings.findIndex((listing) => listing.status === 'rejected');
    if (failed >= 0) {
      await Promise.all(handles.map((handle) => handle.close()));
      const reason = (listings[failed] as PromiseRejectedResult).reason;
      const name = servers[failed]?.name;
      throw new McpToolsetError(
        'ERR_MCP_SERVER_UNAVAILABLE',
        `The MCP server ${name} could not be reached or listed: ${message(reason)}`,
        { cause: reason },
      );
    }
    const taken = new Set(options.taken);
    const tools: Tool[] = [];
    for (const [index, handle] of handles.entries()) {
      const listing = (listings[index] as PromiseFulfilledResult<McpToolInfo[]>).value;
      const allowed = handle.spec.allowedTools === undefined ? undefined : new Set(handle.spec.allowedTools);
      for (const info of listing) {
        if (allowed && !allowed.has(info.name)) continue;
        const { name, renamed } = modelToolName(handle.spec.name, info.name, taken);
        taken.add(name);
        if (renamed) {
          options.logger?.info(
            { runId: context.runId, server: handle.spec.name, tool: info.name, as: name },
            'an MCP tool is offered under another name (characters or length a model API refuses, or a clash)',
          );
        }
        tools.push(mcpTool(handle, info, name, renamed, options));
      }
    }
    return new McpToolset(tools, handles);
  }

  /** Ends every connection and stops every stdio server. */
  async close(): Promise<void> {
    await Promise.all(this.#handles.map((handle) => handle.close()));
  }
}

/** The schema the model is offered: the server's, without `$schema` (Ajv knows draft-07 only; models ignore it). */
function offeredSchema(inputSchema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = inputSchema;
  return schema.type === undefined ? { type: 'object', ...schema } : schema;
}

/**
 * A check of the model's arguments against the server's schema, compiled at
 * the tool's first call (a server may list dozens of tools a run never
 * calls; compiling them all would hold up its start); a schema Ajv cannot
 * compile is left to the server to check.
 */
function argumentParser(
  name: string,
  parameters: Record<string, unknown>,
): NonNullable<Tool['parseArguments']> {
  let parse: NonNullable<Tool['parseArguments']> | undefined;
  return (raw) => {
    if (parse === undefined) {
      try {
        parse = jsonSchemaArguments({ name, parameters });
      } catch {
        parse = jsonSchemaArguments({ name, parameters: { type: 'object' } });
      }
    }
    return parse(raw);
  };
}

function mcpTool(
  handle: ServerHandle,
  info: McpToolInfo,
  name: string,
  renamed: boolean,
  options: McpToolsetOptions,
): Tool {
  const server = handle.spec.name;
  const parameters = offeredSchema(info.inputSchema);
  const own = info.description?.trim() || `The ${info.name} tool of the MCP server ${server}.`;
  const description = (renamed ? `(${server}'s tool "${info.name}") ${own}` : own).slice(0, DESCRIPTION_MAX);
  const { limits, context } = options;
  return {
    name,
    server,
    schema: { name, toolset: 'mcp', description, parameters: parameters as never },
    parseArguments: argumentParser(name, parameters),
    async execute(args, call): Promise<ToolResult> {
      const signal = AbortSignal.any([context.signal, call.signal]);
      let connection: McpConnection;
      try {
        connection = await handle.connection();
      } catch (error) {
        return {
          ok: false,
          code: 'ERR_TOOL_MCP_UNAVAILABLE',
          content: `The MCP server ${server} could not be reached for ${name}: ${message(error)}. Try again later, or do without it.`,
        };
      }
      const oversize = connection.oversize;
      try {
        const result = await connection.client.callTool(
          { name: info.name, arguments: args as Record<string, unknown> },
          undefined,
          { timeout: limits.callTimeoutMs, signal: AbortSignal.any([signal, oversize]) },
        );
        return formatCallResult(result, server, info.name);
      } catch (error) {
        return callError(error, { server, name, oversize, signal, limits });
      }
    },
  };
}

/** A failed call as the tool error the model reads. */
function callError(
  error: unknown,
  at: { server: string; name: string; oversize: AbortSignal; signal: AbortSignal; limits: McpLimits },
): ToolResult {
  const { server, name, signal, limits } = at;
  const oversize = at.oversize.aborted ? at.oversize.reason : undefined;
  if (
    oversize instanceof OutboundError ||
    (error instanceof OutboundError && error.code === 'ERR_RESPONSE_TOO_LARGE')
  ) {
    return {
      ok: false,
      code: 'ERR_TOOL_MCP_TOO_LARGE',
      content: `The MCP server ${server} answered ${name} with more than ${limits.maxResponseBytes} bytes, more than a tool result may be; the answer was dropped. Ask for less (a narrower query, fewer items, a page).`,
    };
  }
  if (signal.aborted) {
    return { ok: false, code: 'ERR_TOOL_CANCELLED', content: `The ${name} call was cancelled.` };
  }
  if (
    (error instanceof McpError && error.code === ErrorCode.RequestTimeout) ||
    (error instanceof OutboundError && error.code === 'ERR_OUTBOUND_TIMEOUT')
  ) {
    return {
      ok: false,
      code: 'ERR_TOOL_MCP_TIMEOUT',
      content: `The MCP server ${server} did not answer ${name} within ${Math.round(limits.callTimeoutMs / 1000)} s; the call was abandoned. Try again with less work, or do without it.`,
    };
  }
  return {
    ok: false,
    code: 'ERR_TOOL_MCP_FAILED',
    content: `The MCP server ${server} could not carry out ${name}: ${message(error)}`,
  };
}
