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
import { registerBatchCommand } from './batch-command.js';
import { registerChatCommand } from './chat-command.js';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { registerRunsCommands } from './commands.js';
import { registerEvalCommand } from './eval-command.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import { type CliIo, type Colors, colorsFor } from './io.js';
import { registerMcpCommands } from './mcp-commands.js';
import { registerMemoryCommands } from './memory-commands.js';
import { modelFlagsOf, modelRequiredHint } from './model-check.js';
import { registerRunCommand } from './run-command.js';
import { registerScheduleCommands } from './schedule-commands.js';
import { registerSessionCommands } from './session-commands.js';
import { registerSkillCommands } from './skill-commands.js';
import { registerUsageCommand } from './usage-command.js';
import { registerWebhookCommands } from './webhook-commands.js';

export { DEFAULT_URL };

interface GlobalOptions {
  url?: string;
  apiKey?: string;
}

/** Every command, in the order `tether --help` lists them; each module registers its own. */
const COMMANDS: readonly RegisterCommand[] = [
  registerRunCommand,
  registerChatCommand,
  registerSessionCommands,
  registerMemoryCommands,
  registerSkillCommands,
  registerMcpCommands,
  registerWebhookCommands,
  registerScheduleCommands,
  registerUsageCommand,
  registerBatchCommand,
  registerRunsCommands,
  registerEvalCommand,
];

const HELP_AFTER = `
Environment:
  TETHER_URL       API address (default: the running local stack's, from TETHER_STACK_FILE or the
                   nearest .tether/stack.json that pnpm start writes; else ${DEFAULT_URL})
  TETHER_API_KEY   API key sent as a bearer token
  NO_COLOR         turn colours off

Exit codes: 0 completed, 1 failed or cancelled, 2 usage error, 3 server unreachable.`;

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
  // The command whose action runs, so that an error's hint names only flags it has.
  let action: Command | undefined;

  const program = createProgram(io, errColors).hook('preAction', (_program, actionCommand) => {
    action = actionCommand;
  });
  const context = contextFactory(program, io, colors, errColors, (id) => {
    runId = id;
  });
  for (const register of COMMANDS) {
    register(program, context, (code) => {
      exitCode = code;
    });
  }
  program.addHelpText('after', HELP_AFTER);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (error) {
    return report(error, io, errColors, { runId, action });
  }
}

/** The bare `tether` program: its global options, version, and output through `io`. */
function createProgram(io: CliIo, errColors: Colors): Command {
  return new Command('tether')
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
}

/**
 * Builds each command's context when its action runs: the client from the global options
 * (or the environment), the terminal, and `onRun` for the Ctrl-C hint.
 */
function contextFactory(
  program: Command,
  io: CliIo,
  colors: Colors,
  errColors: Colors,
  onRun: (id: string) => void,
): () => CommandContext {
  return () => {
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
      onRun,
    };
  };
}

/** What the CLI knows of the failed command: its run (for the Ctrl-C hint), and the command itself. */
interface Failed {
  runId: string | undefined;
  action: Command | undefined;
}

function report(error: unknown, io: CliIo, c: Colors, { runId, action }: Failed): number {
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
    write(c.dim(modelRequiredHint(modelFlagsOf(action))));
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
