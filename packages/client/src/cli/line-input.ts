/**
 * Where `tether chat` reads its lines: at a terminal, one readline prompt per
 * line (closed between lines, so a question's prompt can own the keyboard
 * while a run is live); from a pipe or file, one reader for the whole input,
 * its lines queued until asked for.
 */

import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Output } from './io.js';

export interface LineInput {
  /** The next line, or null at the end of input (Ctrl-D). Rejects with the signal's reason when it aborts. */
  read(prompt: string, signal: AbortSignal): Promise<string | null>;
  close(): void;
}

/**
 * Lines typed at a terminal, with a prompt, line editing and the history of
 * earlier lines (up arrow). Ctrl-C at the prompt calls `onInterrupt`.
 */
export function terminalLines(input: Readable, output: Output, onInterrupt: () => void): LineInput {
  let history: string[] = [];
  return {
    read(prompt, signal) {
      return new Promise((resolve, reject) => {
        if (signal.aborted) {
          reject(signal.reason);
          return;
        }
        const rl = createInterface({ input, output, terminal: true, history, historySize: 200 });
        let done = false;
        const finish = (settle: () => void) => {
          if (done) return;
          done = true;
          signal.removeEventListener('abort', onAbort);
          rl.close();
          settle();
        };
        const onAbort = () => finish(() => reject(signal.reason));
        signal.addEventListener('abort', onAbort, { once: true });
        rl.on('history', (lines: string[]) => {
          history = lines;
        });
        // Ctrl-D on an empty line closes the interface: the end of input.
        rl.on('close', () => finish(() => resolve(null)));
        rl.on('SIGINT', onInterrupt);
        rl.question(prompt, (line) => finish(() => resolve(line)));
      });
    },
    close() {},
  };
}

/** Lines from a pipe or a file, one after another; null once the input has ended. */
export function pipedLines(input: Readable): LineInput {
  const rl = createInterface({ input, terminal: false, crlfDelay: Number.POSITIVE_INFINITY });
  const lines: string[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  rl.on('line', (line) => {
    lines.push(line);
    wake?.();
  });
  rl.on('close', () => {
    ended = true;
    wake?.();
  });
  return {
    async read(_prompt, signal) {
      for (;;) {
        signal.throwIfAborted();
        const line = lines.shift();
        if (line !== undefined) return line;
        if (ended) return null;
        await new Promise<void>((resolve) => {
          const done = () => {
            wake = undefined;
            signal.removeEventListener('abort', done);
            resolve();
          };
          wake = done;
          signal.addEventListener('abort', done, { once: true });
        });
      }
    },
    close() {
      rl.close();
    },
  };
}
