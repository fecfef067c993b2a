import type { TetherClient } from '../client.js';
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
