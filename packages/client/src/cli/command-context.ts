import type { Command } from 'commander';
import type { TetherClient } from '../client.js';
import type { ExitCode } from './exit-codes.js';
import type { CliIo, Colors } from './io.js';

/** What every `tether` command works with: the client, the terminal, its colours. */
export interface CommandContext {
  client: TetherClient;
  io: CliIo;
  /** Colours for stdout. */
  colors: Colors;
  /** Colours for stderr. */
  errColors: Colors;
  /** Whether questions can be asked at the terminal. */
  interactive: boolean;
  now?: () => number;
  /** Told the run id as soon as a run is submitted (for the Ctrl-C hint). */
  onRun?: (id: string) => void;
}

/**
 * Adds a command (or a command group) to the `tether` program. Each action builds its
 * context when it runs, and hands its exit code to `done`.
 */
export type RegisterCommand = (
  program: Command,
  context: () => CommandContext,
  done: (code: ExitCode) => void,
) => void;

/** A commander option parser collecting every value of a repeatable option, in order. */
export function repeatable(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
