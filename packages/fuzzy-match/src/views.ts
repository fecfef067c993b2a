/**
 * Character views of a text for the character-based strategies: the text with
 * some characters rewritten (`\r\n` as `\n`, runs of spaces and tabs as one
 * space, typographic characters as ASCII), and a map back to the original, so
 * a match in the view becomes an exact span of the original.
 */
export interface MappedView {
  text: string;
  /** For each view character, the offset of the original character it came from; `origin[text.length]` is the original's length. */
  origin: Int32Array;
  /** 1 where a view character continues an original character that expanded to several (`—` as `--`). */
  continues: Uint8Array | undefined;
}

/** The original span of view span `[start, end)`. */
export function toOriginal(view: MappedView, start: number, end: number): [number, number] {
  return [view.origin[start] as number, view.origin[end] as number];
}

/** Whether view span `[start, end)` starts and ends on whole original characters. */
export function onCharacterBoundaries(view: MappedView, start: number, end: number): boolean {
  const continues = view.continues;
  if (!continues) return true;
  return continues[start] !== 1 && (end >= view.text.length || continues[end] !== 1);
}

/**
 * Typographic characters and their ASCII forms: ‘ ’ ‚ ‛ as `'`; “ ” „ ‟ as `"`;
 * hyphens, figure and en dashes and the minus sign as `-`; the em dash as `--`;
 * the ellipsis as `...`; no-break, narrow no-break, figure, thin and
 * ideographic spaces as a space.
 */
export const UNICODE_MAP: ReadonlyMap<number, string> = new Map<number, string>([
  [0x2018, "'"],
  [0x2019, "'"],
  [0x201a, "'"],
  [0x201b, "'"],
  [0x201c, '"'],
  [0x201d, '"'],
  [0x201e, '"'],
  [0x201f, '"'],
  [0x2010, '-'],
  [0x2011, '-'],
  [0x2012, '-'],
  [0x2013, '-'],
  [0x2212, '-'],
  [0x2014, '--'],
  [0x2026, '...'],
  [0x00a0, ' '],
  [0x202f, ' '],
  [0x2007, ' '],
  [0x2009, ' '],
  [0x3000, ' '],
]);

const UNICODE_PATTERN = /[\u2018-\u201f\u2010-\u2014\u2212\u2026\u00a0\u202f\u2007\u2009\u3000]/;

/** Whether the text holds a character of `UNICODE_MAP`. */
export function hasMappedUnicode(text: string): boolean {
  return UNICODE_PATTERN.test(text);
}

/** Maps typographic characters to ASCII (no offsets: for patterns and single lines). */
export function mapUnicode(text: string): string {
  if (!hasMappedUnicode(text)) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    out += UNICODE_MAP.get(code) ?? text[i];
  }
  return out;
}

/** What a view rewrites. */
export interface ViewOptions {
  /** Write `\r\n` as `\n`. */
  lf?: boolean;
  /** Collapse runs of spaces and tabs to one space. */
  collapseBlanks?: boolean;
  /** Map typographic characters to ASCII. */
  unicode?: boolean;
}

/** Builds a view of `text` in one pass. Returns the text itself (identity map) when nothing would change. */
export function mappedView(text: string, options: ViewOptions): MappedView {
  const { lf = false, collapseBlanks = false, unicode = false } = options;
  const length = text.length;
  // Worst case every character expands to three (the ellipsis).
  const origin = new Int32Array(unicode ? length * 3 + 1 : length + 1);
  const continues = unicode ? new Uint8Array(length * 3 + 1) : undefined;
  const parts: string[] = [];
  let out = 0;
  // Start of the current run of unchanged characters, copied as one slice.
  let runStart = 0;
  const flush = (to: number): void => {
    if (to > runStart) parts.push(text.slice(runStart, to));
  };
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (lf && code === 13 && i + 1 < length && text.charCodeAt(i + 1) === 10) {
      flush(i);
      parts.push('\n');
      origin[out++] = i;
      i += 2;
      runStart = i;
      continue;
    }
    if (collapseBlanks && (code === 32 || code === 9)) {
      let j = i + 1;
      while (j < length) {
        const next = text.charCodeAt(j);
        if (next !== 32 && next !== 9) break;
        j++;
      }
      if (j - i > 1 || code === 9) {
        flush(i);
        parts.push(' ');
        origin[out++] = i;
        i = j;
        runStart = i;
        continue;
      }
    }
    if (unicode && code >= 0xa0) {
      const mapped = UNICODE_MAP.get(code);
      if (mapped !== undefined) {
        flush(i);
        parts.push(mapped);
        for (let k = 0; k < mapped.length; k++) {
          if (k > 0 && continues) continues[out] = 1;
          origin[out++] = i;
        }
        i++;
        runStart = i;
        continue;
      }
    }
    origin[out++] = i;
    i++;
  }
  flush(length);
  origin[out] = length;
  const mapped = parts.length === 1 ? (parts[0] as string) : parts.join('');
  return {
    text: mapped,
    origin: origin.length === out + 1 ? origin : origin.subarray(0, out + 1),
    continues: continues?.subarray(0, out + 1),
  };
}
