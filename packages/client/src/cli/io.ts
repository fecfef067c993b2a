import { type Readable, Writable } from 'node:stream';
import pc from 'picocolors';
import type { TetherClient, TetherClientOptions } from '../client.js';

export type Colors = ReturnType<typeof pc.createColors>;

/** A terminal-ish output: a stream that may know it is a TTY. */
export type Output = Writable & { isTTY?: boolean; columns?: number };

/**
 * Everything the CLI touches outside itself, so tests can hand it streams, an
 * environment and a client of their own. The entry point (`cli.ts`) passes the
 * process's.
 */
export interface CliIo {
  stdout: Output;
  stderr: Output;
  stdin: Readable & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** Aborted when the user presses Ctrl-C (the entry point owns the signal handler). */
  signal?: AbortSignal;
  /**
   * Takes Ctrl-C over until the returned function is called: each press calls
   * `handler` instead of aborting `signal`. A handler answering false has
   * nothing left to stop, and the process exits (130).
   */
  onInterrupt?: (handler: () => boolean) => () => void;
  /** Builds the API client (tests inject a fetch or a fake). */
  createClient?: (options: TetherClientOptions) => TetherClient;
}

/** Colour when writing to a terminal, unless NO_COLOR is set (or FORCE_COLOR asks for it anyway). */
export function colorsFor(stream: Output, env: CliIo['env']): Colors {
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  const force = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0';
  const enabled = !noColor && (force || (stream.isTTY === true && env.TERM !== 'dumb'));
  return pc.createColors(enabled);
}

/**
 * A writable that forwards to `out` and reports its TTY-ness and width, but is
 * never ended by whoever ends it: prompts end their output when they finish.
 */
export function unclosable(out: Output): Output {
  const forward = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      out.write(chunk, callback);
    },
  });
  Object.defineProperty(forward, 'isTTY', { get: () => out.isTTY });
  Object.defineProperty(forward, 'columns', { get: () => out.columns });
  return forward;
}
