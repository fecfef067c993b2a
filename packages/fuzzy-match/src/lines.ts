import { characterMask } from './similarity.js';

/**
 * Line views of a text, computed once and shared by every line-based strategy.
 * Lines split on `\n`; a `\r` right before it belongs to the line break, never
 * to the line's text or span.
 */
export class LineIndex {
  readonly text: string;
  /** Offset of each line's first character. */
  readonly starts: Int32Array;
  /** Offset just past each line's last character (its `\r\n` or `\n` excluded). */
  readonly ends: Int32Array;
  readonly count: number;
  #lines: string[] | undefined;
  #trimmed: string[] | undefined;
  #trimmedLengths: Int32Array | undefined;
  #trimmedMasks: Int32Array | undefined;
  #maskKnown: Uint8Array | undefined;
  #collapsed: string[] | undefined;
  #crlf: boolean | undefined;

  constructor(text: string) {
    this.text = text;
    let count = 1;
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count++;
    const starts = new Int32Array(count);
    const ends = new Int32Array(count);
    let line = 0;
    let start = 0;
    let crlf = 0;
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) {
      starts[line] = start;
      if (at > start && text.charCodeAt(at - 1) === 13) {
        ends[line] = at - 1;
        crlf++;
      } else {
        ends[line] = at;
      }
      line++;
      start = at + 1;
    }
    starts[line] = start;
    ends[line] = text.length;
    this.starts = starts;
    this.ends = ends;
    this.count = count;
    // Most line breaks are `\r\n`: the text is CRLF.
    this.#crlf = crlf * 2 > count - 1;
  }

  /** True when most of the text's line breaks are `\r\n`. */
  get crlf(): boolean {
    return this.#crlf ?? false;
  }

  /** Line `i`'s text, without its line break (without building every line's). */
  line(i: number): string {
    return this.#lines ? (this.#lines[i] as string) : this.text.slice(this.starts[i], this.ends[i]);
  }

  /** Each line's text, without its line break. */
  get lines(): string[] {
    if (!this.#lines) {
      const lines = new Array<string>(this.count);
      for (let i = 0; i < this.count; i++) lines[i] = this.text.slice(this.starts[i], this.ends[i]);
      this.#lines = lines;
    }
    return this.#lines;
  }

  /** Each line, trimmed at both ends. */
  get trimmed(): string[] {
    if (!this.#trimmed) {
      const trimmed = new Array<string>(this.count);
      for (let i = 0; i < this.count; i++) trimmed[i] = this.line(i).trim();
      this.#trimmed = trimmed;
    }
    return this.#trimmed;
  }

  /**
   * Each trimmed line with its runs of spaces and tabs as one space: the lines
   * of the `whitespace_normalized` view, trimmed.
   */
  get collapsedTrimmed(): string[] {
    if (!this.#collapsed) {
      const trimmed = this.trimmed;
      const collapsed = new Array<string>(this.count);
      for (let i = 0; i < this.count; i++) {
        const line = trimmed[i] as string;
        collapsed[i] = line.includes('\t') || line.includes('  ') ? line.replace(/[ \t]+/g, ' ') : line;
      }
      this.#collapsed = collapsed;
    }
    return this.#collapsed;
  }

  /** The length of each trimmed line. */
  get trimmedLengths(): Int32Array {
    if (!this.#trimmedLengths) {
      const trimmed = this.trimmed;
      const lengths = new Int32Array(this.count);
      for (let i = 0; i < this.count; i++) lengths[i] = (trimmed[i] as string).length;
      this.#trimmedLengths = lengths;
    }
    return this.#trimmedLengths;
  }

  /**
   * Which of 32 buckets of characters trimmed line `i` holds (see
   * `characterMask`), computed the first time a line is asked for: most lines
   * are refused by their length before their characters matter.
   */
  trimmedMask(i: number): number {
    this.#trimmedMasks ??= new Int32Array(this.count);
    this.#maskKnown ??= new Uint8Array(this.count);
    if (this.#maskKnown[i] !== 1) {
      this.#trimmedMasks[i] = characterMask(this.trimmed[i] as string);
      this.#maskKnown[i] = 1;
    }
    return this.#trimmedMasks[i] as number;
  }

  /** The 0-based line that holds `offset`. */
  lineOf(offset: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if ((this.starts[mid] as number) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/**
 * The search text as lines for the line-based strategies. A final line break
 * ends the last line rather than opening an empty one: `"foo()\n"` is the one
 * line `foo()`, and `droppedFinalBreak` says so (the replacement then drops one
 * final line break of its own, so the file's line break is kept, not doubled).
 */
export interface PatternLines {
  lines: string[];
  trimmed: string[];
  droppedFinalBreak: boolean;
  /** Index of the first non-blank line, or -1. */
  firstNonBlank: number;
  nonBlankCount: number;
}

export function patternLines(search: string): PatternLines {
  const lines = search.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.endsWith('\r')) lines[i] = line.slice(0, -1);
  }
  let droppedFinalBreak = false;
  if (lines.length > 1 && lines[lines.length - 1] === '') {
    lines.pop();
    droppedFinalBreak = true;
  }
  const trimmed = lines.map((line) => line.trim());
  let firstNonBlank = -1;
  let nonBlankCount = 0;
  for (let i = 0; i < trimmed.length; i++) {
    if (trimmed[i] !== '') {
      if (firstNonBlank === -1) firstNonBlank = i;
      nonBlankCount++;
    }
  }
  return { lines, trimmed, droppedFinalBreak, firstNonBlank, nonBlankCount };
}

/** The leading spaces and tabs of a line. */
export function leadingWhitespace(line: string): string {
  let i = 0;
  while (i < line.length) {
    const c = line.charCodeAt(i);
    if (c !== 32 && c !== 9) break;
    i++;
  }
  return line.slice(0, i);
}
