import type { McpHeaders, McpServerRef } from '@tether/protocol';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { relativeTime } from './format.js';

/**
 * `--mcp` of `tether run`: `name` (a server the tenant registered, or the
 * operator's of that name) or `name=url` (a server for this run only).
 */
export function parseMcpFlags(values: readonly string[]): McpServerRef[] {
  return values.map((value) => {
    const at = value.indexOf('=');
    if (at === 0) throw new UsageError(`--mcp ${value}: give a server name, or name=url`);
    return at < 0 ? { name: value } : { name: value.slice(0, at), url: value.slice(at + 1) };
  });
}

/** `--header 'Name: value'`, repeated, as headers. */
export function parseHeaderFlags(values: readonly string[]): McpHeaders {
  const headers: McpHeaders = {};
  for (const value of values) {
    const at = value.indexOf(':');
    const name = at < 0 ? '' : value.slice(0, at).trim();
    if (name === '') throw new UsageError(`--header ${JSON.stringify(value)}: write it as 'Name: value'`);
    headers[name] = value.slice(at + 1).trim();
  }
  return headers;
}

/** `tether mcp add NAME URL`: registers a remote MCP server (or replaces the tenant's of that name). */
export async function mcpAddCommand(
  name: string,
  url: string,
  options: { header?: string[]; allow?: string[]; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const headers = parseHeaderFlags(options.header ?? []);
  const server = await client.mcpServers.register(
    {
      name,
      url,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(options.allow && options.allow.length > 0 ? { allowedTools: options.allow } : {}),
    },
    io.signal ? { signal: io.signal } : {},
  );
  if (options.json) {
    io.stdout.write(`${JSON.stringify(server)}\n`);
    return EXIT.ok;
  }
  const created = server.createdAt === server.updatedAt;
  const sealed =
    server.headerNames.length > 0 ? `, headers ${server.headerNames.join(', ')} (stored sealed)` : '';
  io.stdout.write(
    `${created ? 'Registered' : 'Replaced'} MCP server ${c.bold(server.name)} at ${server.url}${sealed}. Runs use it with --mcp ${server.name}.\n`,
  );
  return EXIT.ok;
}

/** `tether mcp ls`: the tenant's MCP servers, and the operator's. */
export async function mcpListCommand(options: { json?: boolean }, ctx: CommandContext): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const list = await client.mcpServers.list(io.signal ? { signal: io.signal } : {});
  if (options.json) {
    io.stdout.write(`${JSON.stringify(list)}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  if (list.data.length === 0) {
    io.stdout.write(`${c.dim('No MCP servers registered. Add one with: tether mcp add <name> <url>')}\n`);
  } else {
    const width = Math.max(4, ...list.data.map((s) => s.name.length));
    io.stdout.write(`${c.dim(`${'NAME'.padEnd(width)}  UPDATED   URL`)}\n`);
    for (const server of list.data) {
      const notes = [
        server.headerNames.length > 0 ? `headers: ${server.headerNames.join(', ')}` : '',
        server.allowedTools ? `tools: ${server.allowedTools.join(', ')}` : '',
      ].filter((note) => note !== '');
      io.stdout.write(
        `${server.name.padEnd(width)}  ${relativeTime(server.updatedAt, now).padEnd(8)}  ${server.url}${notes.length > 0 ? c.dim(`  (${notes.join('; ')})`) : ''}\n`,
      );
    }
    io.stdout.write(`${c.dim(`${list.data.length} of ${list.maxCount} servers`)}\n`);
  }
  if (list.operatorServers.length > 0) {
    io.stdout.write(`${c.dim(`The operator's servers: ${list.operatorServers.join(', ')}`)}\n`);
  }
  return EXIT.ok;
}

/** `tether mcp rm NAME`. */
export async function mcpRemoveCommand(name: string, ctx: CommandContext): Promise<ExitCode> {
  const { client, io } = ctx;
  await client.mcpServers.delete(name, io.signal ? { signal: io.signal } : {});
  io.stdout.write(`Deleted MCP server ${name}.\n`);
  return EXIT.ok;
}

/** Adds `tether mcp` and its subcommands. */
export const registerMcpCommands: RegisterCommand = (program, context, done) => {
  const mcp = program.command('mcp').description("register, list and delete your tenant's MCP servers");
  mcp
    .command('add')
    .description('register a remote MCP server (Streamable HTTP or SSE), or replace yours of that name')
    .argument('<name>', 'its name: runs name it, and see its tools as <name>__<tool>')
    .argument('<url>', 'its https URL')
    .option(
      '--header <header>',
      "a header sent with every request, 'Name: value' (stored sealed; repeatable)",
      repeatable,
    )
    .option('--allow <tool>', 'offer only this tool of it (repeatable; default: all)', repeatable)
    .option('--json', 'print the server as JSON')
    .action(
      async (name: string, url: string, options: { header?: string[]; allow?: string[]; json?: boolean }) => {
        done(await mcpAddCommand(name, url, options, context()));
      },
    );
  mcp
    .command('ls')
    .description("list your MCP servers, and the operator's")
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      done(await mcpListCommand(options, context()));
    });
  mcp
    .command('rm')
    .description('delete an MCP server')
    .argument('<name>', 'server name')
    .action(async (name: string) => {
      done(await mcpRemoveCommand(name, context()));
    });
};
