import type { CommandContext, RegisterCommand } from './command-context.js';
import { repeatable } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { firstLine, relativeTime } from './format.js';
import { pageOptions } from './paging.js';

/** The scope `tether memory ls` lists when none is given: a run's scope when it has no session and names none. */
export const DEFAULT_SCOPE = 'default';

/** `tether memory ls [scope]`: a scope's entries, newest first (best first with --query), one page. */
export async function memoryListCommand(
  scope: string | undefined,
  options: { query?: string; limit?: string; cursor?: string; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const name = scope ?? DEFAULT_SCOPE;
  const page = await client.memory.list(name, {
    ...(options.query ? { query: options.query } : {}),
    ...pageOptions(options, io),
  });
  if (options.json) {
    io.stdout.write(`${JSON.stringify(page)}\n`);
    return EXIT.ok;
  }
  if (page.data.length === 0) {
    const why = page.total === 0 ? `Scope ${name} holds no memory.` : `Nothing in scope ${name} matches.`;
    io.stdout.write(`${c.dim(why)}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  for (const entry of page.data) {
    const { line, more } = firstLine(entry.content, 100);
    const tags = entry.tags.length > 0 ? ` ${c.cyan(`[${entry.tags.join(', ')}]`)}` : '';
    const rest = more > 0 ? c.dim(` (+${more} lines)`) : '';
    io.stdout.write(
      `${c.dim(entry.id)}  ${c.dim(relativeTime(entry.updatedAt, now))}${tags}\n  ${line}${rest}\n`,
    );
  }
  const shown = `${page.data.length} of ${page.total} ${page.total === 1 ? 'entry' : 'entries'} in ${name}`;
  const more = page.nextCursor
    ? `; more: tether memory ls ${name}${options.query ? ` --query ${JSON.stringify(options.query)}` : ''} --cursor ${page.nextCursor}`
    : '';
  io.stdout.write(`${c.dim(shown + more)}\n`);
  return EXIT.ok;
}

/** `tether memory add <scope> <text> [--tag t]…`: a new entry; prints its id. */
export async function memoryAddCommand(
  scope: string,
  text: string,
  options: { tag?: string[]; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io } = ctx;
  const entry = await client.memory.add(
    scope,
    { content: text, ...(options.tag && options.tag.length > 0 ? { tags: options.tag } : {}) },
    io.signal ? { signal: io.signal } : {},
  );
  io.stdout.write(options.json ? `${JSON.stringify(entry)}\n` : `${entry.id}\n`);
  return EXIT.ok;
}

/** `tether memory rm <scope> <id>` or `tether memory rm <scope> --all`. */
export async function memoryRemoveCommand(
  scope: string,
  id: string | undefined,
  options: { all?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  if ((id === undefined) === (options.all !== true)) {
    throw new UsageError('give either an entry id or --all (every entry of the scope), not both');
  }
  const signal = io.signal ? { signal: io.signal } : {};
  if (id !== undefined) {
    await client.memory.delete(scope, id, signal);
    io.stdout.write(`${c.dim(`Deleted ${id} from ${scope}.`)}\n`);
    return EXIT.ok;
  }
  const { deleted } = await client.memory.clear(scope, signal);
  io.stdout.write(`${c.dim(`Deleted ${deleted} ${deleted === 1 ? 'entry' : 'entries'} from ${scope}.`)}\n`);
  return EXIT.ok;
}

/** Adds `tether memory` and its subcommands. */
export const registerMemoryCommands: RegisterCommand = (program, context, done) => {
  const memory = program
    .command('memory')
    .description('read and fix what runs saved for later runs (a scope per user, session or project)');
  memory
    .command('ls')
    .description("list a scope's entries, newest first, or best first with --query")
    .argument('[scope]', 'the scope (default: default)')
    .option('-q, --query <words>', 'words to look for')
    .option('--limit <n>', 'entries per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (scope: string | undefined, options) => {
      done(await memoryListCommand(scope, options, context()));
    });
  memory
    .command('add')
    .description('add an entry to a scope; prints its id')
    .argument('<scope>', 'the scope')
    .argument('<text>', 'the entry (at most 2,000 characters)')
    .option('-t, --tag <tag>', 'a tag (repeat for more)', repeatable)
    .option('--json', 'print the entry as JSON')
    .action(async (scope: string, text: string, options: { tag?: string[]; json?: boolean }) => {
      done(await memoryAddCommand(scope, text, options, context()));
    });
  memory
    .command('rm')
    .description('delete an entry, or every entry of the scope with --all')
    .argument('<scope>', 'the scope')
    .argument('[id]', 'the entry id (mem_…)')
    .option('--all', 'delete every entry of the scope')
    .action(async (scope: string, id: string | undefined, options: { all?: boolean }) => {
      done(await memoryRemoveCommand(scope, id, options, context()));
    });
};
