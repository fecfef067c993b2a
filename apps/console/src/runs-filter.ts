/** The runs list's filters that the page reads from what was typed. */

/** At most this many `key=value` pairs (the API's bound for `metadata.<key>=`). */
const MAX_PAIRS = 8;

/**
 * `key=value` pairs separated by spaces or commas (`team=infra env=prod`), as
 * the API's metadata filter: the pairs, or a problem to show under the field.
 * Empty text is no filter.
 */
export function parseMetadataFilter(text: string): { pairs: Record<string, string> } | { problem: string } {
  const pairs: Record<string, string> = {};
  const words = text.split(/[\s,]+/).filter((word) => word !== '');
  if (words.length > MAX_PAIRS) return { problem: `At most ${MAX_PAIRS} pairs.` };
  for (const word of words) {
    const at = word.indexOf('=');
    if (at <= 0) return { problem: `“${word}” is not key=value.` };
    pairs[word.slice(0, at)] = word.slice(at + 1);
  }
  return { pairs };
}

/** The "Started" filter's choices: how far back, in ms (0: any time). */
export const SINCE_CHOICES: readonly { label: string; ms: number }[] = [
  { label: 'Any time', ms: 0 },
  { label: 'Last hour', ms: 3_600_000 },
  { label: 'Last 24 hours', ms: 86_400_000 },
  { label: 'Last 7 days', ms: 604_800_000 },
];

/**
 * The runs of a page (newest first) created since `sinceMs` before `now`,
 * and whether older pages can hold any (none once the page reaches past it).
 */
export function startedSince<T extends { createdAt: string }>(
  runs: readonly T[],
  sinceMs: number,
  now: number,
): { runs: T[]; olderMayMatch: boolean } {
  if (sinceMs === 0) return { runs: [...runs], olderMayMatch: true };
  const cutoff = now - sinceMs;
  const kept = runs.filter((run) => Date.parse(run.createdAt) >= cutoff);
  return { runs: kept, olderMayMatch: kept.length === runs.length };
}
