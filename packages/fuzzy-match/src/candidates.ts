/**
 * What a refusal shows the model: the lines of several matches, and the lines
 * of the file closest to a search that matched nowhere.
 */
import type { LineIndex } from './lines.js';
import { SimilarityFilter } from './similarity.js';
import type { RawMatch, SearchContext } from './strategies.js';
import type { FuzzyCandidate } from './types.js';

/** The first line of each match, 1-based. */
export function firstLines(index: LineIndex, matches: RawMatch[]): FuzzyCandidate[] {
  return matches.map((match) => {
    const line = match.firstLine ?? index.lineOf(match.start);
    return { line: line + 1, text: index.lines[line] as string };
  });
}

/** The candidates' line numbers for a message: the first ten, then how many more. */
export function listLines(candidates: FuzzyCandidate[]): string {
  const shown = candidates.slice(0, 10).map((c) => c.line);
  return candidates.length > shown.length
    ? `${shown.join(', ')} and ${candidates.length - shown.length} more`
    : shown.join(', ');
}

const CANDIDATE_SIMILARITY = 0.5;
const MAX_CANDIDATES = 3;
const CANDIDATE_BUDGET = 30_000_000;

/** Up to three content lines closest to the search's first non-blank line (similarity >= 0.5), best first. */
export function closestLines(ctx: SearchContext): FuzzyCandidate[] {
  const pattern = ctx.pattern;
  if (pattern.firstNonBlank < 0) return [];
  const target = pattern.trimmed[pattern.firstNonBlank] as string;
  const trimmed = ctx.index.trimmed;
  // Its own budget: the candidates are help, and must not be lost to the search's spent budget.
  const filter = new SimilarityFilter(CANDIDATE_BUDGET);
  const best: { line: number; score: number }[] = [];
  let floor = CANDIDATE_SIMILARITY;
  for (let i = 0; i < trimmed.length; i++) {
    const line = trimmed[i] as string;
    if (line === '') continue;
    const score = filter.atLeast(line, target, floor);
    if (score < 0) continue;
    best.push({ line: i, score });
    best.sort((a, b) => b.score - a.score || a.line - b.line);
    if (best.length > MAX_CANDIDATES) best.pop();
    // Once three are held, only a better line can enter.
    if (best.length === MAX_CANDIDATES)
      floor = Math.max(floor, (best[MAX_CANDIDATES - 1] as { score: number }).score);
  }
  return best.map(({ line }) => ({ line: line + 1, text: ctx.index.lines[line] as string }));
}
