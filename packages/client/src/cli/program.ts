import { ExitPromptError } from '@inquirer/core';
import { Command, CommanderError, Option } from 'commander';
import { TetherClient, type TetherClientOptions } from '../client.js';
import {
  CLIENT_ERROR_CODES,
  TetherApiError,
  TetherConnectionError,
  TetherUnauthorizedError,
} from '../errors.js';
import { VERSION } from '../version.js';
import { DEFAULT_URL, resolveBaseUrl } from './base-url.js';
import { type ChatCommandOptions, chatCommand } from './chat-command.js';
import type { CommandContext } from './command-context.js';
import {
  answerCommand,
  cancelCommand,
  logsCommand,
  removeCommand,
  retryCommand,
  runsCommand,
  showCommand,
} from './commands.js';
import { registerEvalCommand } from './eval-command.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { type CliIo, colorsFor } from './io.js';
import { mcpAddCommand, mcpListCommand, mcpRemoveCommand } from './mcp-commands.js';
import { memoryAddCommand, memoryListCommand, memoryRemoveCommand } from './memory-commands.js';
import { type RunCommandOptions, runCommand } from './run-command.js';
import {
  sessionMessagesCommand,
  sessionRemoveCommand,
  sessionShowCommand,
  sessionsListCommand,
} from './session-commands.js';
import { skillsListCommand, skillsPushCommand, skillsRemoveCommand } from './skill-commands.js';
import {
  webhooksAddCommand,
  webhooksDeliveriesCommand,
  webhooksListCommand,
  webhooksRemoveCommand,
} from './webhook-commands.js';

export { DEFAULT_URL };

interface GlobalOptions {
  url?: string;
  apiKey?: string;
}

/**
 * Runs the `tether` command line against `io` and returns the exit code:
 * 0 completed (or done), 1 failed or cancelled (or refused by the API),
 * 2 usage error, 3 server unreachable, 130 interrupted.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const colors = colorsFor(io.stdout, io.env);
  const errColors = colorsFor(io.stderr, io.env);
  let exitCode: ExitCode = EXIT.ok;
  let runId: string | undefined;

  const program = new Command('tether')
    .description('Run agent jobs on a Tether server, follow them live, and answer their questions.')
    .addOption(
      new Option(
        '--url <url>',
        `API address (env TETHER_URL, else a running pnpm start's .tether/stack.json, else ${DEFAULT_URL})`,
      ),
    )
    .addOption(new Option('--api-key <key>', 'API key (env TETHER_API_KEY)'))
    .version(VERSION, '-V, --version', "print the CLI's version")
    .exitOverride()
    .showHelpAfterError(errColors.dim('(tether --help shows the usage)'))
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(errColors.red(text)),
    });

  const context = (): CommandContext => {
    const globals = program.opts<GlobalOptions>();
    const {
      url: baseUrl,
      source,
      file,
    } = resolveBaseUrl({ flag: globals.url, env: io.env, cwd: process.cwd() });
    const apiKey = globals.apiKey ?? nonEmpty(io.env.TETHER_API_KEY);
    const options: TetherClientOptions = { baseUrl, ...(apiKey ? { apiKey } : {}) };
    let client: TetherClient;
    try {
      client = io.createClient ? io.createClient(options) : new TetherClient(options);
    } catch (error) {
      if (error instanceof Error && 'code' in error && error.code === CLIENT_ERROR_CODES.invalidOption) {
        throw new UsageError(`${error.message} (from ${file ?? source})`);
      }
      throw error;
    }
    return {
      client,
      io,
      colors,
      errColors,
      interactive: io.stdin.isTTY === true && io.stdout.isTTY === true,
      onRun: (id) => {
        runId = id;
      },
    };
  };

  program
    .command('run')
    .description('submit a task, follow it live, and answer its questions')
    .argument('<task>', 'what the agent should do')
    .option('--model <profile>', 'a model profile configured on the server')
    .option(
      '--replay <file>',
      'play a scripted model from a JSON file (demos and tests; the server must allow it)',
    )
    .option('--files <dir>', "send this directory's text files (up to 1 MiB; skips node_modules and .git)")
    .option('--timeout <duration>', 'how long each question waits for an answer: 30s, 10m, 1h, or ms')
    .addOption(new Option('--locale <locale>', 'language of the run').choices(['zh', 'en']))
    .option(
      '--mcp <server>',
      "an MCP server whose tools the run gets: a registered one's name (tether mcp ls), or name=url (repeatable)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--json', 'print events as JSON lines, and never prompt')
    .action(async (task: string, options: RunCommandOptions) => {
      exitCode = await runCommand(task, options, context());
    });

  program
    .command('chat')
    .description('talk with the agent in a session: each line a message, its questions asked inline')
    .option('--session <id>', 'continue this session (its id is printed when a chat starts)')
    .option('--model <profile>', 'a model profile configured on the server')
    .option(
      '--replay <file>',
      'play a scripted model from a JSON file for every message (demos and tests; the server must allow it)',
    )
    .option('--files <dir>', "send this directory's text files into the new session's workspace")
    .option('--timeout <duration>', 'how long each question waits for an answer: 30s, 10m, 1h, or ms')
    .addOption(new Option('--locale <locale>', 'language of the runs').choices(['zh', 'en']))
    .option('--json', 'print events as JSON lines; lines are read from stdin without a prompt')
    .action(async (options: ChatCommandOptions) => {
      exitCode = await chatCommand(options, context());
    });

  const sessions = program.command('sessions').description('list, show, read and delete your sessions');
  sessions
    .command('ls')
    .description('list your sessions, newest first')
    .option('--limit <n>', 'sessions per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (options) => {
      exitCode = await sessionsListCommand(options, context());
    });
  sessions
    .command('show')
    .description('show one session: status, runs, pending question')
    .argument('<id>', 'session id')
    .option('--json', 'print the session as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      exitCode = await sessionShowCommand(id, options, context());
    });
  sessions
    .command('messages')
    .description("print a session's transcript")
    .argument('<id>', 'session id')
    .option('--json', 'print the entries as JSON lines')
    .action(async (id: string, options: { json?: boolean }) => {
      exitCode = await sessionMessagesCommand(id, options, context());
    });
  sessions
    .command('rm')
    .description('delete a session, its transcript, runs and workspace')
    .argument('<id>', 'session id')
    .option('--cancel', 'cancel its live run first (otherwise a live run refuses)')
    .action(async (id: string, options: { cancel?: boolean }) => {
      exitCode = await sessionRemoveCommand(id, options, context());
    });

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
      exitCode = await memoryListCommand(scope, options, context());
    });
  memory
    .command('add')
    .description('add an entry to a scope; prints its id')
    .argument('<scope>', 'the scope')
    .argument('<text>', 'the entry (at most 2,000 characters)')
    .option('-t, --tag <tag>', 'a tag (repeat for more)', (tag: string, tags: string[] = []) => [
      ...tags,
      tag,
    ])
    .option('--json', 'print the entry as JSON')
    .action(async (scope: string, text: string, options: { tag?: string[]; json?: boolean }) => {
      exitCode = await memoryAddCommand(scope, text, options, context());
    });
  memory
    .command('rm')
    .description('delete an entry, or every entry of the scope with --all')
    .argument('<scope>', 'the scope')
    .argument('[id]', 'the entry id (mem_…)')
    .option('--all', 'delete every entry of the scope')
    .action(async (scope: string, id: string | undefined, options: { all?: boolean }) => {
      exitCode = await memoryRemoveCommand(scope, id, options, context());
    });

  const skills = program.command('skills').description("send, list and delete your tenant's skills");
  skills
    .command('push')
    .description('create or replace a skill from a folder (SKILL.md and its other text files)')
    .argument('<folder>', 'the skill folder; its name is the skill name')
    .option('--name <name>', 'the skill name, when it is not the folder name')
    .option('--pinned', 'pin it: runs cannot change or delete it')
    .option('--no-pinned', 'unpin it')
    .option('--json', 'print the summary as JSON')
    .action(async (folder: string, options: { name?: string; pinned?: boolean; json?: boolean }) => {
      exitCode = await skillsPushCommand(folder, options, context());
    });
  skills
    .command('ls')
    .description('list your skills, by name')
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      exitCode = await skillsListCommand(options, context());
    });
  skills
    .command('rm')
    .description('delete a skill')
    .argument('<name>', 'skill name')
    .action(async (name: string) => {
      exitCode = await skillsRemoveCommand(name, context());
    });

  const mcp = program.command('mcp').description("register, list and delete your tenant's MCP servers");
  const repeat = (value: string, previous: string[] = []) => [...previous, value];
  mcp
    .command('add')
    .description('register a remote MCP server (Streamable HTTP or SSE), or replace yours of that name')
    .argument('<name>', 'its name: runs name it, and see its tools as <name>__<tool>')
    .argument('<url>', 'its https URL')
    .option(
      '--header <header>',
      "a header sent with every request, 'Name: value' (stored sealed; repeatable)",
      repeat,
    )
    .option('--allow <tool>', 'offer only this tool of it (repeatable; default: all)', repeat)
    .option('--json', 'print the server as JSON')
    .action(
      async (name: string, url: string, options: { header?: string[]; allow?: string[]; json?: boolean }) => {
        exitCode = await mcpAddCommand(name, url, options, context());
      },
    );
  mcp
    .command('ls')
    .description("list your MCP servers, and the operator's")
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      exitCode = await mcpListCommand(options, context());
    });
  mcp
    .command('rm')
    .description('delete an MCP server')
    .argument('<name>', 'server name')
    .action(async (name: string) => {
      exitCode = await mcpRemoveCommand(name, context());
    });
  const webhooks = program
    .command('webhooks')
    .description('add, list and delete webhook endpoints, and see their deliveries');
  webhooks
    .command('add')
    .description('add an endpoint; prints its id and signing secret (shown only then)')
    .argument('<url>', 'where the events are POSTed (https)')
    .option(
      '-e, --event <type>',
      'an event type to send (repeat for more; default every type, *)',
      (event: string, events: string[] = []) => [...events, event],
    )
    .option('-d, --description <text>', 'what it is for')
    .option('--json', 'print the endpoint as JSON')
    .action(async (url: string, options: { event?: string[]; description?: string; json?: boolean }) => {
      exitCode = await webhooksAddCommand(url, options, context());
    });
  webhooks
    .command('ls')
    .description('list your endpoints, and whether each is enabled, failing or disabled')
    .option('--json', 'print the list as JSON')
    .action(async (options: { json?: boolean }) => {
      exitCode = await webhooksListCommand(options, context());
    });
  webhooks
    .command('rm')
    .description('delete an endpoint')
    .argument('<id>', 'the endpoint id (whk_…)')
    .action(async (id: string) => {
      exitCode = await webhooksRemoveCommand(id, context());
    });
  webhooks
    .command('deliveries')
    .description("list an endpoint's deliveries, newest first: status, attempts, last answer, next retry")
    .argument('<id>', 'the endpoint id (whk_…)')
    .option('--limit <n>', 'deliveries per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (id: string, options: { limit?: string; cursor?: string; json?: boolean }) => {
      exitCode = await webhooksDeliveriesCommand(id, options, context());
    });

  program
    .command('runs')
    .description('list your runs, newest first')
    .option('--status <status>', 'only runs in this status')
    .option('--metadata <key=value>', 'only runs whose metadata has this pair (repeat: all of them)', repeat)
    .option('--limit <n>', 'runs per page')
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--json', 'print the page as JSON')
    .action(async (options) => {
      exitCode = await runsCommand(options, context());
    });

  program
    .command('show')
    .description('show one run: status, todos, pending question, the tree of its crew children, output')
    .argument('<id>', 'run id')
    .option('--json', 'print the run as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      exitCode = await showCommand(id, options, context());
    });

  program
    .command('logs')
    .description("print a run's events; --follow keeps following to the end")
    .argument('<id>', 'run id')
    .option('-f, --follow', 'follow live events until the run ends')
    .option('--json', 'print events as JSON lines')
    .action(async (id: string, options: { follow?: boolean; json?: boolean }) => {
      runId = id;
      exitCode = await logsCommand(id, options, context());
    });

  program
    .command('answer')
    .description("answer a run's question")
    .argument('<id>', 'run id')
    .argument('<request>', 'the question id (see tether show ID)')
    .argument('<text>', 'the answer')
    .action(async (id: string, request: string, text: string) => {
      exitCode = await answerCommand(id, request, text, context());
    });

  program
    .command('cancel')
    .description('cancel a run')
    .argument('<id>', 'run id')
    .action(async (id: string) => {
      exitCode = await cancelCommand(id, context());
    });

  program
    .command('retry')
    .description('run a failed or cancelled run again, as a new run with the same request')
    .argument('<id>', 'run id')
    .option('--json', 'print the new run as JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      exitCode = await retryCommand(id, options, context());
    });

  program
    .command('rm')
    .description('delete an ended run: its record, events and workspace (cancel a live one first)')
    .argument('<id>', 'run id')
    .action(async (id: string) => {
      exitCode = await removeCommand(id, context());
    });

  registerEvalCommand(program, context, (code) => (exitCode = code));

  program.addHelpText(
    'after',
    `
Environment:
  TETHER_URL       API address (default: the running local stack's, from TETHER_STACK_FILE or the
                   nearest .tether/stack.json that pnpm start writes; else ${DEFAULT_URL})
  TETHER_API_KEY   API key sent as a bearer token
  NO_COLOR         turn colours off

Exit codes: 0 completed, 1 failed or cancelled, 2 usage error, 3 server unreachable.`,
  );

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    return report(error, io, errColors, runId);
  }
}

function report(
  error: unknown,
  io: CliIo,
  c: ReturnType<typeof colorsFor>,
  runId: string | undefined,
): number {
  const write = (text: string) => io.stderr.write(`${text}\n`);
  if (error instanceof CommanderError) {
    // Help and version exit 0; commander has printed everything else already.
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof UsageError) {
    write(c.red(`error: ${error.message}`));
    return EXIT.usage;
  }
  if (error instanceof TetherConnectionError) {
    write(c.red(error.message));
    return EXIT.unreachable;
  }
  if (interrupted(error, io)) {
    const hint = runId ? ` It goes on: tether logs ${runId} --follow, or tether cancel ${runId}.` : '';
    write(c.yellow(`Stopped following.${hint}`));
    return EXIT.interrupted;
  }
  if (error instanceof TetherApiError && error.code === 'ERR_MODEL_PROFILE_REQUIRED') {
    // Nothing wrong with the command: the server has no model. Its message says how to give it one.
    write(c.yellow(error.message));
    write(c.dim('Then try again. (--replay <file> plays a scripted model, which needs none.)'));
    return EXIT.failed;
  }
  if (error instanceof TetherApiError) {
    write(c.red(`error: ${error.message} (${error.code}, HTTP ${error.status})`));
    if (error instanceof TetherUnauthorizedError) write(c.dim('Set TETHER_API_KEY or pass --api-key.'));
    if (error.status === 413)
      write(c.dim('The request is over the server body limit: send fewer or smaller files.'));
    return EXIT.failed;
  }
  write(c.red(`error: ${error instanceof Error ? error.message : String(error)}`));
  return EXIT.failed;
}

function interrupted(error: unknown, io: CliIo): boolean {
  return error instanceof ExitPromptError || (io.signal?.aborted === true && error === io.signal.reason);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
