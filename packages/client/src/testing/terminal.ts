/**
 * Plain streams standing in for a terminal in tests: an output that records
 * what was written and can be awaited for a piece of text, and an input to
 * type keys into. Test-only: excluded from the build.
 */
import { PassThrough } from 'node:stream';
import { stripVTControlCharacters } from 'node:util';

export class RecordingOutput extends PassThrough {
  isTTY: boolean;
  columns = 100;
  private text = '';

  constructor(isTTY = false) {
    super();
    this.isTTY = isTTY;
    this.on('data', (chunk: Buffer) => {
      this.text += chunk.toString('utf8');
      this.emit('text');
    });
  }

  /** Everything written so far, with terminal control sequences removed. */
  get plain(): string {
    return stripVTControlCharacters(this.text);
  }

  /** Where the plain output ends now: pass to `waitFor` to look only at what comes later. */
  mark(): number {
    return this.plain.length;
  }

  /** Resolves once the plain output (from `from` on) contains `needle` (or matches it). */
  waitFor(needle: string | RegExp, from = 0): Promise<void> {
    const found = () => {
      const text = this.plain.slice(from);
      return typeof needle === 'string' ? text.includes(needle) : needle.test(text);
    };
    return new Promise((resolve) => {
      const check = () => {
        if (!found()) return;
        this.off('text', check);
        resolve();
      };
      this.on('text', check);
      check();
    });
  }
}

export class KeyboardInput extends PassThrough {
  isTTY: boolean;

  constructor(isTTY = true) {
    super();
    this.isTTY = isTTY;
  }

  static readonly keys = { up: '\u001b[A', down: '\u001b[B', enter: '\r', escape: '\u001b', ctrlC: '\u0003' };

  type(text: string): void {
    this.write(text);
  }
}
