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

  /**
   * What a terminal would show now: the output with its cursor moves and
   * erasures applied (lines cleared, rewritten in place), trailing spaces and
   * blank lines at the end dropped. A prompt that redraws itself shows only its
   * last frame here, where `plain` keeps every frame.
   */
  get screen(): string {
    return renderScreen(this.text);
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

/**
 * Applies what a prompt writes to a screen of lines: text, `\n` (next line),
 * `\r`, and the CSI sequences Inquirer and readline use: cursor up (`A`), down
 * (`B`), forward (`C`), back (`D`), to a column (`G`), erase in line (`K`) and
 * erase below (`J`). Other sequences (colours, cursor visibility) change
 * nothing on the screen. No wrapping: tests keep lines short.
 */
export function renderScreen(text: string): string {
  const lines: string[] = [''];
  let row = 0;
  let col = 0;
  const at = (r: number): string => {
    while (lines.length <= r) lines.push('');
    return lines[r] ?? '';
  };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is what is parsed.
  for (const match of text.matchAll(/\u001b\[([0-9;?]*)([@-~])|\r|\n|[^\u001b\r\n]+|\u001b/g)) {
    const [token, params = '', final] = match;
    if (token === '\n') {
      row++;
      col = 0;
      at(row);
    } else if (token === '\r') {
      col = 0;
    } else if (final !== undefined) {
      const n = params === '' || params.startsWith('?') ? 1 : Number(params.split(';')[0]) || 1;
      const line = at(row);
      if (final === 'A') row = Math.max(0, row - n);
      else if (final === 'B') row += n;
      else if (final === 'C') col += n;
      else if (final === 'D') col = Math.max(0, col - n);
      else if (final === 'G') col = n - 1;
      else if (final === 'K') {
        if (params === '2') lines[row] = '';
        else if (params === '1') lines[row] = ' '.repeat(col) + line.slice(col);
        else lines[row] = line.slice(0, col);
      } else if (final === 'J' && (params === '' || params === '0')) {
        lines[row] = line.slice(0, col);
        lines.length = row + 1;
      }
      at(row);
    } else if (token !== '\u001b') {
      const line = at(row).padEnd(col);
      lines[row] = line.slice(0, col) + token + line.slice(col + token.length);
      col += token.length;
    }
  }
  return lines
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/\n+$/, '');
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
