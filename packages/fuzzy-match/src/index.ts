export { fuzzyFindAll, fuzzyReplace } from './replace.js';
export type {
  FuzzyCandidate,
  FuzzyErrorCode,
  FuzzyMatchResult,
  FuzzyOptions,
  FuzzyReplaceOptions,
  FuzzyReplaceResult,
  StrategyName,
} from './types.js';
export { APPROXIMATE_STRATEGIES, DEFAULT_OPTIONS, STRATEGY_ORDER } from './types.js';
