import type { Session, TranscriptEntryView } from '@tether/protocol';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { formatCountdown } from './duration.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { relativeTime, summariseArguments, truncate } from './format.js';
import type { Colors } from './io.js';
import { pageOptions } from './paging.js';

/** `tether sessions ls`: the caller's sessions, newest first, one page. */
export async function sessionsListCommand(
  options: { limit?: string; cursor?: string; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const page = await client.sessions.list({
    ...pageOptions(options, io),
  });
  if (options.json) {
    io.stdout.write(`${JSON.stringify(page)}\n`);
    return EXIT.ok;
  }
  if (page.data.length === 0) {
    io.stdout.write(`${c.dim('No sessions yet. Start one with: tether chat')}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  const idWidth = Math.max(2, ...page.data.map((s) => s.id.length));
  const statusWidth = Math.max(6, ...page.data.map((s) => s.status.length));
  io.stdout.write(`${c.dim(`${'ID'.padEnd(idWidth)}  ${'STATUS'.padEnd(statusWidth)}  RUNS  UPDATED`)}\n`);
  for (const session of page.data) {
    const waiting = session.pendingClarify
      ? c.magenta(`  ? ${truncate(session.pendingClarify.question, 50)}`)
      : '';
    io.stdout.write(
      `${session.id.padEnd(idWidth)}  ${colorSessionStatus(session, c)}${' '.repeat(statusWidth - session.status.length)}  ${String(session.runs).padStart(4)}  ${relativeTime(session.updatedAt, now)}${waiting}\n`,
    );
  }
  if (page.nextCursor) {
    io.stdout.write(`${c.dim(`More: tether sessions ls --cursor ${page.nextCursor}`)}\n`);
  }
  return EXIT.ok;
}

/** `tether sessions show ID`. */
export async function sessionShowCommand(
  id: string,
  options: { json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  const session = await client.sessions.get(id, io.signal ? { signal: io.signal } : {});
  if (options.json) {
    io.stdout.write(`${JSON.stringify(session)}\n`);
    return EXIT.ok;
  }
  const now = (ctx.now ?? Date.now)();
  const lines = [`${c.bold(session.id)}  ${colorSessionStatus(session, c)}`];
  const field = (name: string, value: string) => lines.push(`${c.dim(name.padEnd(10))}${value}`);
  field('created', `${session.createdAt} (${relativeTime(session.createdAt, now)})`);
  field('updated', `${session.updatedAt} (${relativeTime(session.updatedAt, now)})`);
  field('runs', String(session.runs));
  if (session.lastRunId) field('last run', session.lastRunId);
  if (Object.keys(session.metadata).length > 0) field('metadata', JSON.stringify(session.metadata));
  const q = session.pendingClarify;
  if (q) {
    lines.push(
      '',
      `${c.magenta('?')} ${c.bold(q.question)} ${c.dim(`(${formatCountdown(Date.parse(q.expiresAt) - now)} left)`)}`,
    );
    q.choices.forEach((choice, i) => {
      lines.push(`    ${c.dim(`${i + 1}.`)} ${choice}`);
    });
    lines.push(c.dim(`  answer with: tether answer ${q.runId} ${q.requestId} "your answer"`));
  }
  lines.push(c.dim(`Continue with: tether chat --session ${session.id}`));
  io.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}

/** `tether sessions rm ID [--cancel]`. */
export async function sessionRemoveCommand(
  id: string,
  options: { cancel?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io } = ctx;
  await client.sessions.delete(id, {
    ...(options.cancel ? { cancel: true } : {}),
    ...(io.signal ? { signal: io.signal } : {}),
  });
  io.stdout.write(`Deleted ${id}.\n`);
  return EXIT.ok;
}

/** `tether sessions messages ID`: the whole transcript, in order. */
export async function sessionMessagesCommand(
  id: string,
  options: { json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  for await (const entry of client.sessions.allMessages(id, {
    limit: 1_000,
    ...(io.signal ? { signal: io.signal } : {}),
  })) {
    io.stdout.write(options.json ? `${JSON.stringify(entry)}\n` : formatEntry(entry, c));
  }
  return EXIT.ok;
}

/** One transcript entry for a person: who said it, what, and the tools it called. */
export function formatEntry(entry: TranscriptEntryView, c: Colors): string {
  const lines: string[] = [];
  const content = entry.content.replace(/\n+$/, '');
  if (entry.role === 'user') lines.push(`${c.bold(c.cyan('you>'))} ${content}`);
  else if (entry.role === 'assistant') {
    if (content !== '') lines.push(content);
    for (const call of entry.toolCalls ?? []) {
      lines.push(`  ${c.cyan('>')} ${c.bold(call.name)} ${c.dim(summariseArguments(call.arguments))}`);
    }
  } else {
    const first = content.split('\n')[0] ?? '';
    const more = content.split('\n').length - 1;
    lines.push(
      `    ${c.dim(`${entry.name ?? 'tool'}:`)} ${truncate(first, 100)}${more > 0 ? c.dim(` (+${more} lines)`) : ''}`,
    );
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function colorSessionStatus(session: Session, c: Colors): string {
  switch (session.status) {
    case 'busy':
      return c.cyan(session.status);
    case 'waiting_for_input':
      return c.magenta(session.status);
    default:
      return c.dim(session.status);
  }
}

/** Adds `tether sessions` and its subcommands. */
export const registerSessionCommands: RegisterCommand = (program, context, done) => {
  const sessions = program.command('sessions').description('list, show, read and delete your sessions');
  sessions
    .command('ls')
    .description('list your sessions, newest first')
    .option('--limit <n>', 'sessions per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (options) => {
      done(await sessionsListCommand(options, context()));
    });
  sessions
    .command('show')
    .description('show one session: status, runs, pending question')
    .argument('<id>', 'session id')
    .option('--json', 'print the session as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      done(await sessionShowCommand(id, options, context()));
    });
  sessions
    .command('messages')
    .description("print a session's transcript")
    .argument('<id>', 'session id')
    .option('--json', 'print the entries as JSON lines')
    .action(async (id: string, options: { json?: boolean }) => {
      done(await sessionMessagesCommand(id, options, context()));
    });
  sessions
    .command('rm')
    .description('delete a session, its transcript, runs and workspace')
    .argument('<id>', 'session id')
    .option('--cancel', 'cancel its live run first (otherwise a live run refuses)')
    .action(async (id: string, options: { cancel?: boolean }) => {
      done(await sessionRemoveCommand(id, options, context()));
    });
};
