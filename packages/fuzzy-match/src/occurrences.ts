/**
 * A line-hash index of a few lines (the search's) among many (the content's,
 * trimmed, or the lines of a view of it): where each of the few occurs. Built
 * in one pass over the many; a line is hashed and looked up in the map only
 * when its length and first, second and last characters key like one of the
 * few (a bitmap of 16-bit keys), so most lines cost a few integer operations.
 *
 * With it, a strategy that needs whole lines to be equal starts only the
 * windows where its rarest line sits, and a line the content lacks refuses
 * every window at once: a repetitive file (thousands of `}`) costs one pass,
 * not a comparison of every window's lines.
 */
export class LineOccurrences {
  readonly #at = new Map<string, number[]>();

  constructor(lines: readonly string[], wanted: Iterable<string>) {
    const keys = new Uint8Array(1 << 16);
    for (const line of wanted) {
      if (this.#at.has(line)) continue;
      this.#at.set(line, []);
      keys[lineKey(line)] = 1;
    }
    for (let k = 0; k < lines.length; k++) {
      const line = lines[k] as string;
      if (keys[lineKey(line)] === 1) this.#at.get(line)?.push(k);
    }
  }

  /** The lines equal to `line` (one of those wanted), ascending. */
  of(line: string): readonly number[] {
    return this.#at.get(line) ?? [];
  }

  /**
   * The window starts (ascending) where each of `pattern`'s lines, at its
   * offset, could equal the content's, from the rarest of them; only the rows
   * in `rows` are considered (all when omitted). Empty when one never occurs.
   */
  starts(pattern: readonly string[], rows?: readonly number[]): number[] {
    let pivot = -1;
    let fewest = Number.POSITIVE_INFINITY;
    for (const j of rows ?? pattern.map((_, j) => j)) {
      const n = this.of(pattern[j] as string).length;
      if (n < fewest) {
        fewest = n;
        pivot = j;
      }
    }
    if (pivot < 0) return [];
    return this.of(pattern[pivot] as string).map((k) => k - pivot);
  }
}

/** A 16-bit key of a line: its length and its first, second and last characters. */
export function lineKey(line: string): number {
  const n = line.length;
  if (n === 0) return 0;
  const second = n > 1 ? line.charCodeAt(1) : 0;
  return (n * 0x9e37 + line.charCodeAt(0) * 0x3b + second * 0x1f7 + line.charCodeAt(n - 1) * 0x65) & 0xffff;
}
