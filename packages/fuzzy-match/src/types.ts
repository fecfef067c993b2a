/** The nine strategies, in the order they are tried. */
export const STRATEGY_ORDER = [
  'exact',
  'line_trimmed',
  'whitespace_normalized',
  'indent_flexible',
  'escape_normalized',
  'trimmed_boundary',
  'unicode_normalized',
  'block_anchor',
  'context_aware',
] as const;

export type StrategyName = (typeof STRATEGY_ORDER)[number];

/** Strategies that accept text that is only similar; `replaceAll` never applies them to more than one match. */
export const APPROXIMATE_STRATEGIES: readonly StrategyName[] = ['block_anchor', 'context_aware'];

/** One match: `matchedText === content.slice(startIndex, endIndex)`. */
export interface FuzzyMatchResult {
  strategy: StrategyName;
  startIndex: number;
  endIndex: number;
  matchedText: string;
  /** block_anchor: the middle's similarity; context_aware: the mean line similarity. */
  similarity?: number;
}

export interface FuzzyOptions {
  /** block_anchor: least similarity of the middle lines joined, inclusive. Default 0.6. */
  blockAnchorSimilarity?: number;
  /**
   * The line threshold of both approximate strategies (named for context_aware, where the design
   * states it): least similarity of every non-blank search line to the file line at its position,
   * inclusive. Default 0.8.
   */
  contextLineSimilarity?: number;
}

export interface FuzzyReplaceOptions extends FuzzyOptions {
  /** Replace every match instead of refusing more than one. Default false. */
  replaceAll?: boolean;
}

export type FuzzyErrorCode =
  | 'EMPTY_SEARCH'
  | 'NO_MATCH'
  | 'AMBIGUOUS'
  | 'FUZZY_REPLACE_ALL'
  | 'IDENTICAL'
  | 'ESCAPE_DRIFT';

/** A line of the content, 1-based, offered to the model so it can correct its search. */
export interface FuzzyCandidate {
  line: number;
  text: string;
  /** AMBIGUOUS, FUZZY_REPLACE_ALL: how many matches start on this line (each line is listed once). */
  matches?: number;
  /** NO_MATCH: the search's line (1-based) that this file line stands for where the search comes closest. */
  searchLine?: number;
  /** NO_MATCH: the text of `searchLine`. */
  searchText?: string;
}

export type FuzzyReplaceResult =
  | { ok: true; content: string; count: number; strategy: StrategyName; matches: FuzzyMatchResult[] }
  | {
      ok: false;
      code: FuzzyErrorCode;
      message: string;
      count: number;
      candidates?: FuzzyCandidate[];
    };

export const DEFAULT_OPTIONS: Required<FuzzyOptions> = {
  blockAnchorSimilarity: 0.6,
  contextLineSimilarity: 0.8,
};

/** Merges options with the defaults once and checks each bound. */
export function resolveOptions(options: FuzzyOptions | undefined): Required<FuzzyOptions> {
  const resolved = { ...DEFAULT_OPTIONS };
  if (!options) return resolved;
  for (const key of Object.keys(DEFAULT_OPTIONS) as (keyof FuzzyOptions)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
      throw new RangeError(`fuzzy-match option "${key}" must be a number from 0 to 1, got ${String(value)}`);
    }
    resolved[key] = value;
  }
  return resolved;
}
