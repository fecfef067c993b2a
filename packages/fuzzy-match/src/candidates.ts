/**
 * What a refusal shows the model: the lines where several matches start, and
 * where a search that matched nowhere comes closest.
 *
 * A search that matched nowhere is placed in two steps. First, by the lines it
 * shares with the file: every line of the search that the file has (trimmed,
 * and not trivially short) votes for the window where the two would line up,
 * weighted by its length, and the windows with the most votes are the closest
 * places. Each is shown at its first line that differs from the search, with
 * the search's line it stands for, so the model sees what to fix. The votes
 * come from the line-hash index the strategies built (`LineOccurrences`), so
 * they cost one visit per occurrence. When no line of the search is in the
 * file, the closest places are the windows on the lines most similar to the
 * search's first non-blank line instead.
 */
import type { LineIndex } from './lines.js';
import { SimilarityFilter } from './similarity.js';
import type { RawMatch, SearchContext } from './strategies.js';
import type { FuzzyCandidate } from './types.js';

/** The lines where matches start, 1-based, each once with how many matches start there. */
export function matchLines(index: LineIndex, matches: RawMatch[]): FuzzyCandidate[] {
  const candidates: FuzzyCandidate[] = [];
  for (const match of matches) {
    const line = (match.firstLine ?? index.lineOf(match.start)) + 1;
    const last = candidates[candidates.length - 1];
    // Matches come left to right, so those on one line are adjacent.
    if (last !== undefined && last.line === line) last.matches = (last.matches ?? 1) + 1;
    else candidates.push({ line, text: index.line(line - 1), matches: 1 });
  }
  return candidates;
}

/** The match lines for a message: "2 on line 1, 1 on line 5", the first ten lines, then how many more. */
export function listMatchLines(candidates: FuzzyCandidate[]): string {
  const shown = candidates.slice(0, 10).map((c) => `${c.matches ?? 1} on line ${c.line}`);
  const more = candidates.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and more on ${more} other lines` : shown.join(', ');
}

const CANDIDATE_SIMILARITY = 0.5;
const MAX_CANDIDATES = 3;
/** How many lines the fallback compares, most alike at their ends first. */
const CANDIDATE_LINES = 64;
/** A bound on that work for very long lines (about 2 ms; see `SimilarityFilter`'s cost units). */
const CANDIDATE_BUDGET = 2_000_000;
/** Search lines shorter than this (`}`, `});`) are too common to place a search by. */
const MIN_VOTING_LENGTH = 4;
/** A search line repeated more often than this votes through its first occurrences only. */
const MAX_ROWS_PER_LINE = 8;

/**
 * Where a search that matched nowhere comes closest: up to three places, each
 * as the file line that differs first there, with `searchLine` and
 * `searchText` naming the search's line it stands for. Best first.
 */
export function closestPlaces(ctx: SearchContext): FuzzyCandidate[] {
  const pattern = ctx.pattern;
  if (pattern.firstNonBlank < 0) return [];
  const voted = votedWindows(ctx);
  // Failing that, the windows that put the search's first non-blank line on the lines most like it.
  const starts = voted.length > 0 ? voted : closestLines(ctx).map((k) => k - pattern.firstNonBlank);
  const places: FuzzyCandidate[] = [];
  const taken = new Set<number>();
  for (const start of starts) {
    const j = firstDifference(ctx, start);
    if (j < 0 || taken.has(start + j)) continue;
    taken.add(start + j);
    places.push({
      line: start + j + 1,
      text: ctx.index.line(start + j),
      searchLine: j + 1,
      searchText: pattern.lines[j] as string,
    });
    if (places.length === MAX_CANDIDATES) break;
  }
  return places;
}

/** The starts of the windows with the most votes, most first (see the module's comment). */
function votedWindows(ctx: SearchContext): number[] {
  const index = ctx.index;
  const pattern = ctx.pattern;
  const height = pattern.lines.length;
  const windows = index.count - height + 1;
  if (height < 2 || windows <= 0) return [];
  const votes = new Int32Array(windows);
  const rowsOf = new Map<string, number>();
  let voted = false;
  for (let j = 0; j < height; j++) {
    const line = pattern.trimmed[j] as string;
    if (line.length < MIN_VOTING_LENGTH) continue;
    const rows = (rowsOf.get(line) ?? 0) + 1;
    rowsOf.set(line, rows);
    if (rows > MAX_ROWS_PER_LINE) continue;
    // Where the file has this line (from the line-hash index the strategies built).
    for (const k of ctx.occurrences.of(line)) {
      const start = k - j;
      if (start < 0 || start >= windows) continue;
      votes[start] = (votes[start] as number) + line.length;
      voted = true;
    }
  }
  return voted ? topWindows(votes, MAX_CANDIDATES * 2) : [];
}

/** The `count` windows with the most votes (more than none), most first, then the earliest. */
function topWindows(votes: Int32Array, count: number): number[] {
  const top: number[] = [];
  for (let start = 0; start < votes.length; start++) {
    const v = votes[start] as number;
    if (v === 0) continue;
    if (top.length === count && v <= (votes[top[count - 1] as number] as number)) continue;
    let at = top.length;
    while (at > 0 && (votes[top[at - 1] as number] as number) < v) at--;
    top.splice(at, 0, start);
    if (top.length > count) top.pop();
  }
  return top;
}

/**
 * The first line of the window at `start` that differs from the search's
 * (trimmed; blank equals blank), among the lines the file has; -1 if none.
 */
function firstDifference(ctx: SearchContext, start: number): number {
  const pattern = ctx.pattern.trimmed;
  const trimmed = ctx.index.trimmed;
  for (let j = Math.max(0, -start); j < pattern.length && start + j < trimmed.length; j++) {
    if (trimmed[start + j] !== pattern[j]) return j;
  }
  return -1;
}

/**
 * Up to three content lines (0-based) closest to the search's first non-blank
 * line (similarity >= 0.5), best first, among the 64 non-blank lines that
 * share the most characters with it at their start and end (a counting sort,
 * one short look at each line). In a file of up to 64 non-blank lines these
 * are the closest lines; in a larger one, the closest of those most like it
 * at their ends (which hold 3 in 4 of the closest lines of generated source).
 */
function closestLines(ctx: SearchContext): number[] {
  const pattern = ctx.pattern;
  const target = pattern.trimmed[pattern.firstNonBlank] as string;
  const trimmed = ctx.index.trimmed;
  const order = byCommonEnds(trimmed, target);
  // Its own budget: the candidates are help, and must not be lost to the search's spent budget.
  const filter = new SimilarityFilter(CANDIDATE_BUDGET);
  const best: { line: number; score: number }[] = [];
  let floor = CANDIDATE_SIMILARITY;
  for (let n = 0; n < order.length && n < CANDIDATE_LINES; n++) {
    const i = order[n] as number;
    const score = filter.atLeast(trimmed[i] as string, target, floor);
    if (filter.exhausted) break;
    if (score < 0) continue;
    best.push({ line: i, score });
    best.sort((a, b) => b.score - a.score || a.line - b.line);
    if (best.length > MAX_CANDIDATES) best.pop();
    // Once three are held, only a better line can enter.
    if (best.length === MAX_CANDIDATES)
      floor = Math.max(floor, (best[MAX_CANDIDATES - 1] as { score: number }).score);
  }
  return best.map(({ line }) => line);
}

/** The non-blank lines, most characters in common with `target` at their start and end first, then in file order. */
function byCommonEnds(lines: string[], target: string): Int32Array {
  const keys = new Int32Array(lines.length);
  const buckets = new Int32Array(target.length + 2);
  let nonBlank = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '') {
      keys[i] = -1;
      continue;
    }
    const shorter = Math.min(line.length, target.length);
    let start = 0;
    while (start < shorter && line.charCodeAt(start) === target.charCodeAt(start)) start++;
    let end = 0;
    while (
      end < shorter - start &&
      line.charCodeAt(line.length - 1 - end) === target.charCodeAt(target.length - 1 - end)
    ) {
      end++;
    }
    // Most shared first: bucket 0 holds the lines that share the whole target length.
    const key = target.length - (start + end);
    keys[i] = key;
    buckets[key + 1] = (buckets[key + 1] as number) + 1;
    nonBlank++;
  }
  for (let b = 1; b < buckets.length; b++) buckets[b] = (buckets[b] as number) + (buckets[b - 1] as number);
  const order = new Int32Array(nonBlank);
  for (let i = 0; i < lines.length; i++) {
    const key = keys[i] as number;
    if (key < 0) continue;
    order[buckets[key] as number] = i;
    buckets[key] = (buckets[key] as number) + 1;
  }
  return order;
}
