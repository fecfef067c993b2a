/**
 * Whether a command's runs would get a model, asked of the server
 * (`GET /v1/models`) before the command starts anything, and the hints that
 * say how to give it one. A hint names only the flags the command has.
 */
import type { ModelCatalog } from '@tether/protocol';
import type { Command } from 'commander';
import type { TetherClient } from '../client.js';
import { TetherNotFoundError } from '../errors.js';
import type { CommandContext } from './command-context.js';

/** The flags a command offers for choosing its runs' model. */
export interface ModelFlags {
  /** `--model <profile>`: a profile configured on the server. */
  model: boolean;
  /** `--replay <file>`: a scripted model, which needs no profile. */
  replay: boolean;
}

/** What the command line chose: a profile, a replay script, or neither (the server's default). */
export interface ModelChoice {
  profile?: string | undefined;
  replay?: boolean | undefined;
}

/** Why the runs would get no model: a line saying so, and lines saying how to fix it. */
export interface ModelProblem {
  message: string;
  hints: string[];
}

/** The command whose runs need the model: its name as typed (`tether chat`), for the hints, and its flags. */
export interface ModelCommand {
  command: string;
  flags: ModelFlags;
}

/**
 * The server's own setups (the API's `ERR_MODEL_PROFILE_REQUIRED` message names the same):
 * each a variable and what it configures.
 */
const MODEL_SETUPS: ReadonlyArray<readonly [string, string]> = [
  ['OPENAI_API_KEY', 'OpenAI'],
  [
    'OPENAI_BASE_URL',
    'an OpenAI-compatible server (Ollama, vLLM, DeepSeek, Qwen), with OPENAI_API_KEY if it needs one',
  ],
  ['ANTHROPIC_API_KEY', 'Anthropic'],
];

/**
 * Asks the server whether runs with `choice` would get a model. Undefined when
 * they would, or when the server is too old to say (404: the run's submit
 * will tell); otherwise what is wrong and how to fix it.
 */
export async function checkModel(
  client: TetherClient,
  choice: ModelChoice,
  command: ModelCommand,
  signal?: AbortSignal,
): Promise<ModelProblem | undefined> {
  let catalog: ModelCatalog;
  try {
    catalog = await client.models(signal ? { signal } : {});
  } catch (error) {
    if (error instanceof TetherNotFoundError) return undefined;
    throw error;
  }
  return modelProblem(catalog, choice, command);
}

/**
 * {@link checkModel} for a command about to start: false, with the problem
 * written to stderr, when it must not.
 */
export async function ensureModel(
  ctx: CommandContext,
  choice: ModelChoice,
  command: ModelCommand,
): Promise<boolean> {
  const problem = await checkModel(ctx.client, choice, command, ctx.io.signal);
  if (problem === undefined) return true;
  const { io, errColors: c } = ctx;
  io.stderr.write(`${c.yellow(problem.message)}\n`);
  for (const hint of problem.hints) io.stderr.write(`${c.dim(hint)}\n`);
  return false;
}

/** What {@link checkModel} decides from the server's catalog. */
export function modelProblem(
  catalog: ModelCatalog,
  choice: ModelChoice,
  { command, flags }: ModelCommand,
): ModelProblem | undefined {
  const names = catalog.profiles.map((profile) => profile.name);
  const again = `Then run ${command} again.`;
  if (choice.replay === true) {
    if (catalog.replay) return undefined;
    const fallback = catalog.defaultProfile;
    return {
      message: `This server does not allow --replay: ${command} started nothing.`,
      hints: [
        'To allow it, set TETHER_ALLOW_REPLAY=true where the API and the workers run, then restart them.',
        fallback === null
          ? again
          : `${again} Or leave --replay out: runs get the default profile, ${fallback}.`,
      ],
    };
  }
  if (choice.profile !== undefined) {
    if (names.includes(choice.profile)) return undefined;
    if (names.length === 0) {
      return {
        message: `No model profile "${choice.profile}": no model is configured on this server, so ${command} started nothing.`,
        hints: [...setupHints(), again],
      };
    }
    return {
      message: `No model profile "${choice.profile}" on this server (known: ${names.join(', ')}): ${command} started nothing.`,
      hints: ['Name one of those with --model <profile>.'],
    };
  }
  if (catalog.defaultProfile !== null) return undefined;
  if (names.length > 0) {
    return {
      message: `This server has no default model profile: ${command} started nothing.`,
      hints: [
        flags.model
          ? `Name one with --model <profile> (known: ${names.join(', ')}).`
          : `Set TETHER_DEFAULT_MODEL_PROFILE to one (known: ${names.join(', ')}) where the API and the workers run, and restart them. ${again}`,
      ],
    };
  }
  return {
    message: `No model is configured on this server: ${command} started nothing.`,
    hints: [
      ...setupHints(),
      flags.replay && catalog.replay
        ? `${again} (--replay <file> plays a scripted model, which needs none.)`
        : again,
    ],
  };
}

function setupHints(): string[] {
  const width = Math.max(...MODEL_SETUPS.map(([name]) => name.length));
  return [
    'To configure one, set one of these where the API and the workers run, then restart them:',
    ...MODEL_SETUPS.map(([name, what]) => `  ${name.padEnd(width)}  ${what}`),
  ];
}

/** The model flags `command` really has. */
export function modelFlagsOf(command: Command | undefined): ModelFlags {
  const has = (flag: string) => command?.options.some((option) => option.long === flag) === true;
  return { model: has('--model'), replay: has('--replay') };
}

/**
 * The hint under the server's `ERR_MODEL_PROFILE_REQUIRED` (whose message says
 * how to configure a model), naming only the flags the failed command has.
 */
export function modelRequiredHint(flags: ModelFlags): string {
  const offers = [
    flags.model ? '--model <profile> names a profile the server has' : undefined,
    flags.replay ? '--replay <file> plays a scripted model, which needs none' : undefined,
  ].filter((offer) => offer !== undefined);
  return offers.length === 0 ? 'Then try again.' : `Then try again. (${offers.join('; ')}.)`;
}
