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
 *   8 block_anchor           first and last lines anchor, middle similarity >= 0.6,
 *                            and every non-blank middle line similarity >= 0.8
 *   9 context_aware          every non-blank line similarity >= 0.8
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
 * `line_trimmed`, tried before them, accepts it. The chain reaches them only
 * after `line_trimmed` found nothing, and then they return at once.
 *
 * Cost: a search that matches nowhere runs every strategy, so each is pruned
 * before its expensive phase, and a strategy whose necessary condition fails
 * for every window costs one pass over the lines or less: the search's lines
 * looked up in a line-hash index of the content's (`LineOccurrences`), whole-
 * line windows and anchors tried only where the rarest of them sits, the
 * character-based views built only over runs of lines that may hold the search
 * (`NeedleLines`), and the approximate strategies' windows refused by integer
 * length bounds, the most selective line first, before any character is
 * looked at (`LineRule`). Lines, trimmed
 * lines and their lengths are computed once per content; most surviving pairs
 * are refused by length and common-character bounds before any Levenshtein
 * (see `SimilarityFilter`).
 */
import { LineIndex, type PatternLines, patternLines } from './lines.js';
import { LineOccurrences } from './occurrences.js';
import { atLeast, characterMask, EPSILON, SimilarityFilter } from './similarity.js';
import type { FuzzyOptions, StrategyName } from './types.js';
import {
  hasMappedUnicode,
  type MappedView,
  mappedView,
  mapUnicode,
  onCharacterBoundaries,
  toOriginal,
  type ViewOptions,
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
  /** How many windows `line_trimmed` found (undefined until it ran). */
  lineTrimmedFound: number | undefined;
  #unicodeTrimmed: string[] | undefined;
  #occurrences: LineOccurrences | undefined;

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

  /** Where each of the search's trimmed lines occurs among the content's trimmed lines. */
  get occurrences(): LineOccurrences {
    this.#occurrences ??= new LineOccurrences(this.index.trimmed, this.pattern.trimmed);
    return this.#occurrences;
  }

  /** The content's lines with typographic characters as ASCII, trimmed (the lines of the unicode view). */
  get unicodeTrimmed(): string[] {
    this.#unicodeTrimmed ??= this.index.trimmed.map((line) =>
      hasMappedUnicode(line) ? mapUnicode(line).trim() : line,
    );
    return this.#unicodeTrimmed;
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
  starts?: readonly number[],
): RawMatch[] {
  const index = ctx.index;
  const found: RawMatch[] = [];
  const last = index.count - height;
  // Given `starts` (ascending, every window that could be accepted among them), only those are tried.
  const total = starts ? starts.length : last + 1;
  let free = 0;
  for (let n = 0; n < total; n++) {
    const i = starts ? (starts[n] as number) : n;
    if (i < free || i > last) continue;
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
    free = i + height;
  }
  return ctx.filter.exhausted ? [] : found;
}

/**
 * Windows whose lines all equal the pattern's after trimming (and pass
 * `also`), tried only where the pattern's rarest line sits (see
 * `LineOccurrences`, of the pattern's lines in `trimmedContent`).
 */
function trimmedWindows(
  ctx: SearchContext,
  trimmedPattern: string[],
  trimmedContent: string[],
  occurrences: LineOccurrences,
  also?: (i: number) => boolean,
) {
  const height = trimmedPattern.length;
  const starts = occurrences.starts(trimmedPattern);
  if (starts.length === 0) return [];
  return windows(
    ctx,
    (i) => {
      for (let j = 0; j < height; j++) if (trimmedContent[i + j] !== trimmedPattern[j]) return false;
      return also && !also(i) ? false : undefined;
    },
    height,
    starts,
  );
}

const exact: Strategy = (ctx) => occurrences(ctx.content, ctx.search).map(([start, end]) => ({ start, end }));

const lineTrimmed: Strategy = (ctx) => {
  const found = trimmedWindows(ctx, ctx.pattern.trimmed, ctx.index.trimmed, ctx.occurrences);
  ctx.lineTrimmedFound = found.length;
  return found;
};

const whitespaceNormalized: Strategy = (ctx) => {
  const needle = mappedView(ctx.search.trim(), { lf: true, collapseBlanks: true }).text;
  if (needle === '' || !wordsOccur(ctx.content, needle)) return [];
  return inLines(ctx, needle, ctx.index.collapsedTrimmed, { lf: true, collapseBlanks: true });
};

/**
 * Where a character-based strategy can find `needle` in a view of the content
 * whose lines, trimmed, are `lines` (every view keeps the line breaks): a run
 * of lines whose first holds the needle's first line, whose middle ones equal
 * its middle lines, and whose last holds its last, all trimmed. Checking a run
 * costs a string comparison or two (lengths first) on lines that are already
 * there, where a view of the whole content costs a pass over every character
 * and an offset map.
 */
class NeedleLines {
  readonly height: number;
  readonly #parts: string[];

  constructor(needle: string) {
    this.#parts = needle.split('\n').map((line) => line.trim());
    this.height = this.#parts.length;
  }

  /**
   * The runs of `lines` to try, ascending: where the rarest middle line sits
   * (see `LineOccurrences`), or undefined (every run) when there is none.
   */
  starts(lines: readonly string[]): readonly number[] | undefined {
    if (this.height < 3) return undefined;
    const middle = this.#parts.slice(1, -1);
    return new LineOccurrences(lines, middle).starts(
      this.#parts,
      middle.map((_, j) => j + 1),
    );
  }

  /** Whether lines `i` to `i + height - 1` may hold the needle (a necessary condition). */
  mayHoldAt(lines: string[], i: number): boolean {
    const parts = this.#parts;
    const last = this.height - 1;
    for (let j = 1; j < last; j++) if (lines[i + j] !== parts[j]) return false;
    if (!(lines[i] as string).includes(parts[0] as string)) return false;
    return last === 0 || (lines[i + last] as string).includes(parts[last] as string);
  }
}

/** Whether some run of `lines` may hold `needle` (see `NeedleLines`): the view is built only when so. */
function linesMayHold(needle: string, lines: string[]): boolean {
  const shape = new NeedleLines(needle);
  const starts = shape.starts(lines);
  const total = starts ? starts.length : lines.length - shape.height + 1;
  for (let n = 0; n < total; n++) {
    const i = starts ? (starts[n] as number) : n;
    if (i >= 0 && i + shape.height <= lines.length && shape.mayHoldAt(lines, i)) return true;
  }
  return false;
}

/**
 * Every non-overlapping occurrence of `needle` in the view `options` makes of
 * the content, left to right, as `inView` of the whole view would find them;
 * but only the runs of lines that may hold it (see `NeedleLines`) are viewed,
 * each on its own, so the cost is one comparison a line plus the runs' text.
 * (Runs of spaces and tabs never cross a line break, so a run's view is the
 * whole view's text of those lines.)
 */
function inLines(ctx: SearchContext, needle: string, lines: string[], options: ViewOptions): RawMatch[] {
  const index = ctx.index;
  const shape = new NeedleLines(needle);
  const starts = shape.starts(lines);
  const total = starts ? starts.length : index.count - shape.height + 1;
  const found: RawMatch[] = [];
  let lastEnd = 0;
  for (let n = 0; n < total; n++) {
    const i = starts ? (starts[n] as number) : n;
    if (i < 0 || i + shape.height > index.count || !shape.mayHoldAt(lines, i)) continue;
    const from = index.starts[i] as number;
    const view = mappedView(ctx.content.slice(from, index.ends[i + shape.height - 1]), options);
    // Occurrences that start on line i (an occurrence spans exactly `height` lines).
    const firstLineEnd = shape.height === 1 ? view.text.length : view.text.indexOf('\n');
    let at = view.text.indexOf(needle);
    while (at !== -1 && at <= firstLineEnd) {
      const end = at + needle.length;
      const [start, stop] = toOriginal(view, at, end);
      if (from + start >= lastEnd && onCharacterBoundaries(view, at, end)) {
        found.push({ start: from + start, end: from + stop });
        lastEnd = from + stop;
        at = view.text.indexOf(needle, end);
      } else {
        at = view.text.indexOf(needle, at + 1);
      }
    }
  }
  return found;
}

/**
 * A quick refusal before a view of the whole content is built: every word of
 * the needle (text between spaces and line breaks, which no view changes) must
 * occur in the content as it is. The three longest distinct ones are checked.
 */
function wordsOccur(content: string, needle: string): boolean {
  const words = [...new Set(needle.split(/[ \n]+/))].sort((a, b) => b.length - a.length);
  for (let w = 0; w < Math.min(3, words.length); w++) {
    if (!content.includes(words[w] as string)) return false;
  }
  return true;
}

/**
 * `indent_flexible` and `trimmed_boundary` accept only windows that
 * `line_trimmed` accepts; after it found none (the only way the chain reaches
 * them), they return at once.
 */
function lineTrimmedFoundNone(ctx: SearchContext): boolean {
  return ctx.lineTrimmedFound === 0;
}

const indentFlexible: Strategy = (ctx) => {
  if (lineTrimmedFoundNone(ctx)) return [];
  const lines = ctx.index.lines;
  const pattern = ctx.pattern.lines.map((line) => line.trimStart());
  return trimmedWindows(ctx, ctx.pattern.trimmed, ctx.index.trimmed, ctx.occurrences, (i) =>
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
  if (!linesMayHold(needle, ctx.index.trimmed)) return [];
  return inView(mappedView(ctx.content, { lf: true }), needle);
};

const trimmedBoundary: Strategy = (ctx) => {
  if (lineTrimmedFoundNone(ctx)) return [];
  const lines = ctx.index.lines;
  const pattern = ctx.pattern.lines;
  const height = pattern.length;
  return trimmedWindows(ctx, ctx.pattern.trimmed, ctx.index.trimmed, ctx.occurrences, (i) => {
    for (let j = 1; j < height - 1; j++) if (lines[i + j] !== pattern[j]) return false;
    return true;
  });
};

const unicodeNormalized: Strategy = (ctx) => {
  const contentHas = hasMappedUnicode(ctx.content);
  // With nothing to map on either side, exact and line_trimmed have already answered.
  if (!contentHas && !hasMappedUnicode(ctx.search)) return [];
  const needle = mappedView(ctx.search, { lf: true, unicode: true }).text;
  // Both modes need the search's lines, mapped and trimmed, to line up with the content's.
  const trimmedContent = contentHas ? ctx.unicodeTrimmed : ctx.index.trimmed;
  if (!linesMayHold(needle, trimmedContent)) return [];
  const view = contentHas
    ? mappedView(ctx.content, { lf: true, unicode: true })
    : mappedView(ctx.content, { lf: true });
  const hits = inView(view, needle);
  if (hits.length > 0) {
    ctx.unicodeMode = 'exact';
    return hits;
  }
  const trimmedPattern = ctx.pattern.trimmed.map(mapUnicode);
  const mappedPattern = trimmedPattern.map((line) => line.trim());
  const lineHits = trimmedWindows(
    ctx,
    mappedPattern,
    trimmedContent,
    new LineOccurrences(trimmedContent, mappedPattern),
  );
  if (lineHits.length > 0) ctx.unicodeMode = 'lines';
  return lineHits;
};

/** The approximate strategies need at least two non-blank pattern lines. */
function approximable(ctx: SearchContext): boolean {
  return ctx.pattern.nonBlankCount >= 2 && ctx.pattern.lines.length <= ctx.index.count;
}

/**
 * The approximate strategies' rule for single lines: every non-blank search
 * line listed must reach the line threshold against the file line at its
 * position in the window, and every blank one must stand for a blank line (its
 * whitespace may differ). So a match never rewrites a line the search did not
 * quote: a line that is only "half" like the search's refuses the window.
 *
 * A window is tried line by line, the line least likely to pass first (the one
 * whose length range the fewest file lines fall in), and with the O(1) bounds
 * (blank, length, characters present) for all lines before any Levenshtein:
 * most windows cost one or two comparisons of integers.
 */
class LineRule {
  readonly #ctx: SearchContext;
  readonly #threshold: number;
  /** Pattern lines that must be blank in the file. */
  readonly #blank: number[];
  /** Pattern lines that must reach the threshold, most selective first. */
  readonly #rows: number[];
  readonly #rowLengths: number[];
  /** Per row, the least and greatest file line length within reach (`|la - lb| <= (1 - t) * max`). */
  readonly #shortest: Int32Array;
  readonly #longest: Int32Array;
  readonly #rowMasks: number[];
  /** Per row, the score of each distinct file line already compared (-1: below the threshold). */
  readonly #memo: Map<string, number>[];
  /**
   * The order rows are tried in: most selective first, and a row that refuses
   * a window moves to the front, as it likely refuses the next (in a file of
   * thousands of `}`, the one search line that is not `}`).
   */
  readonly #order: Int32Array;

  constructor(ctx: SearchContext, lines: number[]) {
    this.#ctx = ctx;
    const threshold = ctx.options.contextLineSimilarity;
    this.#threshold = threshold;
    const pattern = ctx.pattern.trimmed;
    this.#blank = lines.filter((j) => pattern[j] === '');
    const rows = lines.filter((j) => pattern[j] !== '');
    const reach = lengthReach(ctx.index.trimmedLengths, threshold);
    const passing = rows.map((j) => reach((pattern[j] as string).length));
    const order = rows
      .map((_, r) => r)
      .sort((a, b) => (passing[a] as number) - (passing[b] as number) || a - b);
    this.#rows = order.map((r) => rows[r] as number);
    this.#rowLengths = this.#rows.map((j) => (pattern[j] as string).length);
    this.#shortest = Int32Array.from(this.#rowLengths, (length) => lengthRange(length, threshold)[0]);
    this.#longest = Int32Array.from(this.#rowLengths, (length) => lengthRange(length, threshold)[1]);
    this.#rowMasks = this.#rows.map((j) => characterMask(pattern[j] as string));
    this.#memo = this.#rows.map(() => new Map<string, number>());
    this.#order = Int32Array.from(this.#rows, (_, r) => r);
  }

  /** Moves the row at position `p` of the order to the front (by a swap); returns -1, the refusal. */
  #refusedBy(p: number): number {
    if (p > 0) {
      const order = this.#order;
      const r = order[p] as number;
      order[p] = order[0] as number;
      order[0] = r;
    }
    return -1;
  }

  /** Whether the window starting at line `i` keeps the rule; then the sum of the rows' scores, else -1. */
  reaches(i: number): number {
    const index = this.#ctx.index;
    const lengths = index.trimmedLengths;
    for (const j of this.#blank) if (lengths[i + j] !== 0) return -1;
    const rows = this.#rows;
    const order = this.#order;
    const shortest = this.#shortest;
    const longest = this.#longest;
    // The O(1) bounds for every row before any Levenshtein: the length (most windows end here, on
    // their first row), then the characters present.
    const slack = 1 - this.#threshold;
    for (let p = 0; p < order.length; p++) {
      const r = order[p] as number;
      const k = i + (rows[r] as number);
      const la = lengths[k] as number;
      if (la < (shortest[r] as number) || la > (longest[r] as number)) return this.#refusedBy(p);
      const allowed = Math.floor(slack * Math.max(la, this.#rowLengths[r] as number) + EPSILON);
      const ma = index.trimmedMask(k);
      const mb = this.#rowMasks[r] as number;
      if (popcount(ma & ~mb) > allowed || popcount(mb & ~ma) > allowed) return this.#refusedBy(p);
    }
    for (let p = 0; p < order.length; p++) {
      const r = order[p] as number;
      if (this.#score(r, i + (rows[r] as number)) < 0) return this.#refusedBy(p);
    }
    // Every row passed: their scores (remembered) summed in a fixed order.
    let sum = 0;
    for (let r = 0; r < rows.length; r++) sum += this.#score(r, i + (rows[r] as number));
    return sum;
  }

  #score(r: number, k: number): number {
    const line = this.#ctx.index.trimmed[k] as string;
    // Windows overlap, and source files repeat lines: each (distinct line, row) pair is compared once.
    // (Keyed by the line's string: V8 keeps a string's hash, so a lookup costs little.)
    const memo = this.#memo[r] as Map<string, number>;
    let value = memo.get(line);
    if (value === undefined) {
      const filter = this.#ctx.filter;
      value = filter.atLeast(
        line,
        this.#ctx.pattern.trimmed[this.#rows[r] as number] as string,
        this.#threshold,
      );
      if (filter.exhausted) return -1;
      memo.set(line, value);
    }
    return value;
  }
}

/**
 * The lengths a line can have and still reach `threshold` against a line of
 * `length`: `|la - lb| <= (1 - t) * max(la, lb)` is `t * lb <= la <= lb / t`.
 */
function lengthRange(length: number, threshold: number): [number, number] {
  const low = Math.max(0, Math.ceil(length * threshold - EPSILON));
  const high = threshold > 0 ? Math.floor(length / threshold + EPSILON) : 0x7fffffff;
  return [low, Math.min(high, 0x7fffffff)];
}

/**
 * For a line threshold, a function from a search line's length to how many
 * file lines have a length within its reach (see `lengthRange`), from a
 * histogram of the trimmed lengths: O(1) a question.
 */
function lengthReach(lengths: Int32Array, threshold: number): (length: number) => number {
  let longest = 0;
  for (let k = 0; k < lengths.length; k++) longest = Math.max(longest, lengths[k] as number);
  const atMost = new Int32Array(longest + 2);
  for (let k = 0; k < lengths.length; k++) {
    const at = (lengths[k] as number) + 1;
    atMost[at] = (atMost[at] as number) + 1;
  }
  for (let n = 1; n < atMost.length; n++) atMost[n] = (atMost[n] as number) + (atMost[n - 1] as number);
  return (length) => {
    const [low, high] = lengthRange(length, threshold);
    if (low > longest) return 0;
    return (atMost[Math.min(high, longest) + 1] as number) - (atMost[low] as number);
  };
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
  // The anchors are looked up in the line-hash index; the middle lines' rule is built once a window has both.
  const starts = ctx.occurrences.starts(pattern, [0, height - 1]);
  if (starts.length === 0) return [];
  let middleLines: LineRule | undefined;
  return windows(
    ctx,
    (i) => {
      if (trimmed[i] !== first || trimmed[i + height - 1] !== lastLine) return false;
      middleLines ??= new LineRule(ctx, pattern.map((_, j) => j).slice(1, -1));
      if (middleLines.reaches(i) < 0) return false;
      // The middle's length, from line lengths alone, bounds its similarity before it is joined.
      let length = height > 2 ? height - 3 : 0;
      for (let j = 1; j < height - 1; j++) length += lengths[i + j] as number;
      const max = Math.max(length, middle.length);
      if (max > 0 && !atLeast(1 - Math.abs(length - middle.length) / max, threshold)) return false;
      const candidate = trimmed.slice(i + 1, i + height - 1).join('\n');
      const score = filter.atLeast(candidate, middle, threshold);
      return score < 0 ? false : score;
    },
    height,
    starts,
  );
};

const contextAware: Strategy = (ctx) => {
  if (!approximable(ctx)) return [];
  const rule = new LineRule(
    ctx,
    ctx.pattern.trimmed.map((_, j) => j),
  );
  const rows = ctx.pattern.nonBlankCount;
  return windows(ctx, (i) => {
    const sum = rule.reaches(i);
    // Matched: the reported similarity is the mean score over the non-blank lines.
    return sum < 0 ? false : sum / rows;
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
