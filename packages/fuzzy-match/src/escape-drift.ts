/**
 * The escape-drift guard. Models sometimes send old_string and new_string
 * with their quotes backslash-escaped (`\'`, `\"`), as they would appear
 * inside a JSON or shell string, where the file has plain quotes. An exact
 * match cannot happen then, but a tolerant strategy can still match the block
 * (the escaped line is similar enough), and the replacement would write the
 * backslashes into the file. So when the winning strategy is not `exact`, an
 * escaped quote of new_string must already be in the file where it matched.
 */
import type { LineIndex } from './lines.js';
import type { RawMatch } from './strategies.js';

/** The escaped quotes the guard looks for. */
const ESCAPED_QUOTES = ["\\'", '\\"'] as const;

/** An escaped quote of new_string that the file does not have where a match landed. */
export interface EscapeDrift {
  /** `\'` or `\"`. */
  sequence: (typeof ESCAPED_QUOTES)[number];
  /** The match's first line, 0-based. */
  line: number;
}

/**
 * The first escaped quote of `newString` missing from the lines that a match
 * spans (its matched text and the rest of those lines), or undefined when the
 * file has every one of them at every match.
 */
export function escapeDrift(
  index: LineIndex,
  matches: RawMatch[],
  newString: string,
): EscapeDrift | undefined {
  const sequences = ESCAPED_QUOTES.filter((sequence) => newString.includes(sequence));
  if (sequences.length === 0) return undefined;
  for (const match of matches) {
    const first = match.firstLine ?? index.lineOf(match.start);
    const last = index.lineOf(Math.max(match.start, match.end - 1));
    const place = index.text.slice(index.starts[first], index.ends[last]);
    for (const sequence of sequences) {
      if (!place.includes(sequence)) return { sequence, line: first };
    }
  }
  return undefined;
}

/** The escaped quotes of `search` that `content` has nowhere (joined with "and"), or undefined. */
export function escapedQuotesMissing(search: string, content: string): string | undefined {
  const missing = ESCAPED_QUOTES.filter(
    (sequence) => search.includes(sequence) && !content.includes(sequence),
  );
  return missing.length > 0 ? missing.join(' and ') : undefined;
}
