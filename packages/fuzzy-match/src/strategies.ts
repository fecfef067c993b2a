/**
 * The nine strategies of the design document, tried in its order; the first
 * that finds at least one match decides.
 *
 *   1 exact                  content.indexOf(search)
 *   2 line_trimmed           every line trimmed at both ends
 *   3 whitespace_normalized  runs of spaces and tabs as one space (line breaks kept)
 *   4 indent_flexible        leading whitespace of every line ignored
 *   5 escape_normalized      literal \n \t \r in the search unescaped, then exact
 *   6 trimmed_boundary       first and last lines trimmed, the rest exact
 *   7 unicode_normalized     typographic characters as ASCII, then exact, then line_trimmed
 *   8 block_anchor           first and last lines anchor, middle similarity >= 0.6
 *   9 context_aware          lines count at similarity >= 0.8, windows at >= 50% counting
 *
 * Invariants: every strategy returns non-overlapping spans, left to right;
 * line-based strategies (2, 4, 6, 8, 9 and 7's line mode) span whole lines, from
 * the first line's indentation to the end of the last line, its line break
 * excluded; character-based ones (1, 3, 5, 7's exact mode) may start and end
 * mid-line. The character-based views read `\r\n` as `\n` (except `exact`).
 *
 * Two strategies can never win, and are kept for the design's order:
 * `indent_flexible` and `trimmed_boundary` each accept a window only when every
 * line is equal after trimming at both ends, which is exactly when
 * `line_trimmed`, tried before them, accepts it. They run as that check plus
 * their own stricter one, so they cost a pass over the lines and nothing more.
 *
 * Cost: lines, trimmed lines and their lengths are computed once per content;
 * the approximate strategies compare only windows whose anchors or lengths
 * allow a match, and refuse most pairs by length and common-character bounds
 * before any Levenshtein (see `SimilarityFilter`); a window is abandoned as
 * soon as it cannot reach its threshold.
 */
import { LineIndex, type PatternLines, patternLines } from './lines.js';
import { atLeast, characterMask, EPSILON, SimilarityFilter } from './similarity.js';
import type { FuzzyOptions, StrategyName } from './types.js';
import {
  hasMappedUnicode,
  type MappedView,
  mappedView,
  mapUnicode,
  onCharacterBoundaries,
  toOriginal,
} from './views.js';

/** A match before it is reported, with what the replacement needs. */
export interface RawMatch {
  start: number;
  end: number;
  similarity?: number;
  /** Line-based matches: the first matched line (0-based). */
  firstLine?: number;
}

/** What one search shares across strategies: views are built at most once. */
export class SearchContext {
  readonly content: string;
  readonly search: string;
  readonly options: Required<FuzzyOptions>;
  readonly filter = new SimilarityFilter();
  #index: LineIndex | undefined;
  #pattern: PatternLines | undefined;
  /** Which mode `unicode_normalized` matched in. */
  unicodeMode: 'exact' | 'lines' | undefined;
  /** The search as `escape_normalized` unescaped it. */
  unescaped: string | undefined;

  constructor(content: string, search: string, options: Required<FuzzyOptions>) {
    this.content = content;
    this.search = search;
    this.options = options;
  }

  get index(): LineIndex {
    this.#index ??= new LineIndex(this.content);
    return this.#index;
  }

  get pattern(): PatternLines {
    this.#pattern ??= patternLines(this.search);
    return this.#pattern;
  }
}

type Strategy = (ctx: SearchContext) => RawMatch[];

/** Every non-overlapping occurrence of `needle` in `haystack`, left to right. */
function occurrences(haystack: string, needle: string, accept?: (start: number, end: number) => boolean) {
  const found: [number, number][] = [];
  if (needle.length === 0) return found;
  let from = 0;
  for (;;) {
    const at = haystack.indexOf(needle, from);
    if (at === -1) break;
    const end = at + needle.length;
    if (!accept || accept(at, end)) {
      found.push([at, end]);
      from = end;
    } else {
      from = at + 1;
    }
  }
  return found;
}

function inView(view: MappedView, needle: string): RawMatch[] {
  return occurrences(view.text, needle, (s, e) => onCharacterBoundaries(view, s, e)).map(([s, e]) => {
    const [start, end] = toOriginal(view, s, e);
    return { start, end };
  });
}

/** Scans windows of the pattern's height; `accept` decides each, left to right, without overlap. */
function windows(
  ctx: SearchContext,
  accept: (first: number) => number | undefined | false,
  height = ctx.pattern.lines.length,
): RawMatch[] {
  const index = ctx.index;
  const found: RawMatch[] = [];
  const last = index.count - height;
  for (let i = 0; i <= last; i++) {
    // An exhausted work budget makes the whole answer unknown, not just the rest of it.
    if (ctx.filter.exhausted) return [];
    const score = accept(i);
    if (score === false) continue;
    const match: RawMatch = {
      start: index.starts[i] as number,
      end: index.ends[i + height - 1] as number,
      firstLine: i,
    };
    if (typeof score === 'number') match.similarity = score;
    found.push(match);
    i += height - 1;
  }
  return ctx.filter.exhausted ? [] : found;
}

/** Windows whose lines all equal the pattern's after trimming (and pass `also`). */
function trimmedWindows(
  ctx: SearchContext,
  trimmedPattern: string[],
  trimmedContent: string[],
  also?: (i: number) => boolean,
) {
  const first = trimmedPattern[0] as string;
  const height = trimmedPattern.length;
  return windows(ctx, (i) => {
    if (trimmedContent[i] !== first) return false;
    for (let j = 1; j < height; j++) if (trimmedContent[i + j] !== trimmedPattern[j]) return false;
    return also && !also(i) ? false : undefined;
  });
}

const exact: Strategy = (ctx) => occurrences(ctx.content, ctx.search).map(([start, end]) => ({ start, end }));

const lineTrimmed: Strategy = (ctx) => trimmedWindows(ctx, ctx.pattern.trimmed, ctx.index.trimmed);

const whitespaceNormalized: Strategy = (ctx) => {
  const needle = mappedView(ctx.search.trim(), { lf: true, collapseBlanks: true }).text;
  if (needle === '' || !wordsOccur(ctx.content, needle)) return [];
  return inView(mappedView(ctx.content, { lf: true, collapseBlanks: true }), needle);
};

/**
 * A quick refusal before a view of the whole content is built: every word of
 * the needle (text between spaces and line breaks, which no view changes) must
 * occur in the content as it is. The three longest are checked.
 */
function wordsOccur(content: string, needle: string): boolean {
  const words = needle.split(/[ \n]+/).sort((a, b) => b.length - a.length);
  for (let w = 0; w < Math.min(3, words.length); w++) {
    if (!content.includes(words[w] as string)) return false;
  }
  return true;
}

const indentFlexible: Strategy = (ctx) => {
  const lines = ctx.index.lines;
  const pattern = ctx.pattern.lines.map((line) => line.trimStart());
  return trimmedWindows(ctx, ctx.pattern.trimmed, ctx.index.trimmed, (i) =>
    pattern.every((line, j) => (lines[i + j] as string).trimStart() === line),
  );
};

const ESCAPES = /\\[ntr]/;

/** Unescapes literal `\n`, `\t` and `\r` as `escape_normalized` reads them. */
export function unescapeSequences(text: string): string {
  return text.replace(/\\([ntr])/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : '\r'));
}

const escapeNormalized: Strategy = (ctx) => {
  if (!ESCAPES.test(ctx.search)) return [];
  const unescaped = unescapeSequences(ctx.search);
  ctx.unescaped = unescaped;
  const needle = mappedView(unescaped, { lf: true }).text;
  return inView(mappedView(ctx.content, { lf: true }), needle);
};

const trimmedBoundary: Strategy = (ctx) => {
  const lines = ctx.index.lines;
  const pattern = ctx.pattern.lines;
  const height = pattern.length;
  return trimmedWindows(ctx, ctx.pattern.trimmed, ctx.index.trimmed, (i) => {
    for (let j = 1; j < height - 1; j++) if (lines[i + j] !== pattern[j]) return false;
    return true;
  });
};

const unicodeNormalized: Strategy = (ctx) => {
  const contentHas = hasMappedUnicode(ctx.content);
  // With nothing to map on either side, exact and line_trimmed have already answered.
  if (!contentHas && !hasMappedUnicode(ctx.search)) return [];
  const needle = mappedView(ctx.search, { lf: true, unicode: true }).text;
  const view = contentHas
    ? mappedView(ctx.content, { lf: true, unicode: true })
    : mappedView(ctx.content, { lf: true });
  const hits = inView(view, needle);
  if (hits.length > 0) {
    ctx.unicodeMode = 'exact';
    return hits;
  }
  const trimmedPattern = ctx.pattern.trimmed.map(mapUnicode);
  const trimmedContent = contentHas
    ? ctx.index.trimmed.map((line) => mapUnicode(line).trim())
    : ctx.index.trimmed;
  const lineHits = trimmedWindows(
    ctx,
    trimmedPattern.map((line) => line.trim()),
    trimmedContent,
  );
  if (lineHits.length > 0) ctx.unicodeMode = 'lines';
  return lineHits;
};

/** The approximate strategies need at least two non-blank pattern lines. */
function approximable(ctx: SearchContext): boolean {
  return ctx.pattern.nonBlankCount >= 2 && ctx.pattern.lines.length <= ctx.index.count;
}

const blockAnchor: Strategy = (ctx) => {
  if (!approximable(ctx)) return [];
  const pattern = ctx.pattern.trimmed;
  const height = pattern.length;
  const first = pattern[0] as string;
  const lastLine = pattern[height - 1] as string;
  const middle = pattern.slice(1, -1).join('\n');
  const trimmed = ctx.index.trimmed;
  const lengths = ctx.index.trimmedLengths;
  const threshold = ctx.options.blockAnchorSimilarity;
  const filter = ctx.filter;
  return windows(ctx, (i) => {
    if (trimmed[i] !== first || trimmed[i + height - 1] !== lastLine) return false;
    // The middle's length, from line lengths alone, bounds its similarity before it is joined.
    let length = height > 2 ? height - 3 : 0;
    for (let j = 1; j < height - 1; j++) length += lengths[i + j] as number;
    const max = Math.max(length, middle.length);
    if (max > 0 && !atLeast(1 - Math.abs(length - middle.length) / max, threshold)) return false;
    const candidate = trimmed.slice(i + 1, i + height - 1).join('\n');
    const score = filter.atLeast(candidate, middle, threshold);
    return score < 0 ? false : score;
  });
};

const contextAware: Strategy = (ctx) => {
  if (!approximable(ctx)) return [];
  const pattern = ctx.pattern.trimmed;
  const height = pattern.length;
  const rows: number[] = [];
  for (let j = 0; j < height; j++) if (pattern[j] !== '') rows.push(j);
  const need = ctx.options.contextWindowRatio * rows.length;
  const allowedMisses = rows.length - need + EPSILON;
  const lineThreshold = ctx.options.contextLineSimilarity;
  const trimmed = ctx.index.trimmed;
  const lengths = ctx.index.trimmedLengths;
  const masks = ctx.index.trimmedMasks;
  const rowLengths = rows.map((j) => (pattern[j] as string).length);
  const rowMasks = rows.map((j) => characterMask(pattern[j] as string));
  const slack = 1 - lineThreshold;
  const filter = ctx.filter;
  // A line can count for some row only if its length is within reach of some row's length;
  // a window whose span holds too few such lines is refused in O(1) by a running sum.
  let shortest = Number.POSITIVE_INFINITY;
  let longest = 0;
  for (const length of rowLengths) {
    shortest = Math.min(shortest, length);
    longest = Math.max(longest, length);
  }
  const minLength = Math.ceil(shortest * lineThreshold - EPSILON);
  const maxLength =
    lineThreshold > 0 ? Math.floor(longest / lineThreshold + EPSILON) : Number.POSITIVE_INFINITY;
  const viable = new Int32Array(ctx.index.count + 1);
  for (let k = 0; k < ctx.index.count; k++) {
    const length = lengths[k] as number;
    viable[k + 1] =
      (viable[k] as number) +
      (length >= minLength && length <= maxLength && (length > 0 || lineThreshold <= 0) ? 1 : 0);
  }
  // Windows overlap, and source files repeat lines: each (distinct line, row) pair is compared once.
  // (Keyed by the line's string: V8 keeps a string's hash, so a lookup costs little.)
  const memo = rows.map(() => new Map<string, number>());
  const exactMemo = rows.map(() => new Map<string, number>());
  const score = (r: number, k: number, threshold: number): number => {
    const line = trimmed[k] as string;
    const cache = (threshold > 0 ? memo : exactMemo)[r] as Map<string, number>;
    let value = cache.get(line);
    if (value === undefined) {
      value = filter.atLeast(line, pattern[rows[r] as number] as string, threshold);
      if (filter.exhausted) return -1;
      cache.set(line, value);
    }
    return value;
  };
  return windows(ctx, (i) => {
    if ((viable[i + height] as number) - (viable[i] as number) < need - EPSILON) return false;
    // First pass, in O(1) a line: can the line reach the threshold by length and by the characters it has?
    let misses = 0;
    for (let r = 0; r < rows.length; r++) {
      const k = i + (rows[r] as number);
      const la = lengths[k] as number;
      const lb = rowLengths[r] as number;
      const allowed = Math.floor(slack * Math.max(la, lb) + EPSILON);
      const ma = masks[k] as number;
      const mb = rowMasks[r] as number;
      if (
        (la > lb ? la - lb : lb - la) > allowed ||
        popcount(ma & ~mb) > allowed ||
        popcount(mb & ~ma) > allowed
      ) {
        if (++misses > allowedMisses) return false;
      }
    }
    // Second pass: the real similarities, stopping once the window cannot count enough lines.
    misses = 0;
    let counted = 0;
    for (let r = 0; r < rows.length; r++) {
      if (score(r, i + (rows[r] as number), lineThreshold) >= 0) counted++;
      else if (++misses > allowedMisses) return false;
    }
    if (!atLeast(counted, need)) return false;
    // Matched: the reported similarity is the mean score over the non-blank lines.
    let sum = 0;
    for (let r = 0; r < rows.length; r++) sum += score(r, i + (rows[r] as number), 0);
    return sum / rows.length;
  });
};

function popcount(x: number): number {
  let v = x - ((x >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

export const STRATEGIES: ReadonlyArray<readonly [StrategyName, Strategy]> = [
  ['exact', exact],
  ['line_trimmed', lineTrimmed],
  ['whitespace_normalized', whitespaceNormalized],
  ['indent_flexible', indentFlexible],
  ['escape_normalized', escapeNormalized],
  ['trimmed_boundary', trimmedBoundary],
  ['unicode_normalized', unicodeNormalized],
  ['block_anchor', blockAnchor],
  ['context_aware', contextAware],
];

/** Runs the chain; the first strategy with a match decides. */
export function findMatches(ctx: SearchContext): { strategy: StrategyName; matches: RawMatch[] } | undefined {
  for (const [name, strategy] of STRATEGIES) {
    const matches = strategy(ctx);
    if (matches.length > 0) return { strategy: name, matches };
  }
  return undefined;
}
