import { distance } from 'fastest-levenshtein';

export const EPSILON = 1e-9;

/** `value >= threshold`, robust to floating-point noise in shares such as 0.3 * 10. */
export function atLeast(value: number, threshold: number): boolean {
  return value >= threshold - EPSILON;
}

/** Which of 32 buckets of characters a text holds: `levenshtein(a, b) >= popcount(mask(a) & ~mask(b))`. */
export function characterMask(text: string): number {
  let mask = 0;
  for (let i = 0; i < text.length; i++) mask |= 1 << (text.charCodeAt(i) & 31);
  return mask;
}

const BUCKETS = 128;

/**
 * The approximate strategies' work limit per search, in cost units of about a
 * nanosecond each on a 2-core machine (about 160 ms): enough for every pattern
 * of up to 200 lines against a few dozen long candidates, and small enough that
 * no input of up to 1 MB takes more than 250 ms.
 */
export const DEFAULT_BUDGET = 160_000_000;

/** Estimated cost of one bit-parallel Levenshtein: `ceil(min / 32)` words over `max` characters, plus the call. */
function levenshteinCost(la: number, lb: number): number {
  return 9 * Math.ceil(Math.min(la, lb) / 32) * Math.max(la, lb) + 300;
}

/**
 * Answers "is `similarity(a, b) >= threshold`?" and, when so, the similarity.
 * Cheap bounds run before any Levenshtein: the length difference, then the
 * size of the two texts' common character multiset (an edit fixes at most one
 * unmatched character on each side, so `levenshtein >= max - common`). Most
 * unrelated pairs are refused by these in a few dozen operations.
 *
 * The work is bounded: each comparison is charged its estimated cost (about a
 * nanosecond a unit on a 2-core machine: `ceil(min / 32) * max` for the
 * bit-parallel Levenshtein, the lengths for the character count), and once the
 * budget is spent `exhausted` is set and every answer is -1. A search that
 * exhausts it reports no match rather than a partial answer.
 */
export class SimilarityFilter {
  readonly #counts = new Int32Array(BUCKETS);
  readonly #initial: number;
  #budget: number;
  exhausted = false;

  constructor(budget = DEFAULT_BUDGET) {
    this.#initial = budget;
    this.#budget = budget;
  }

  /** The cost units charged so far: 0 when no pair got past the length bound. */
  get spent(): number {
    return this.#initial - this.#budget;
  }

  /** The similarity when it reaches `threshold`, else -1. */
  atLeast(a: string, b: string, threshold: number): number {
    if (a === b) return 1;
    const la = a.length;
    const lb = b.length;
    const max = Math.max(la, lb);
    // Allowed edits: levenshtein <= (1 - threshold) * max.
    const allowed = Math.floor((1 - threshold) * max + EPSILON);
    const diff = la > lb ? la - lb : lb - la;
    if (diff > allowed) return -1;
    if (!this.#charge(2 * (la + lb) + 64)) return -1;
    if (!this.#commonAtLeast(a, b, max - allowed)) return -1;
    // A common prefix and suffix cost no edits: only the rest goes to the Levenshtein.
    let start = 0;
    const shorter = Math.min(la, lb);
    while (start < shorter && a.charCodeAt(start) === b.charCodeAt(start)) start++;
    let end = 0;
    while (end < shorter - start && a.charCodeAt(la - 1 - end) === b.charCodeAt(lb - 1 - end)) end++;
    const restA = start === 0 && end === 0 ? a : a.slice(start, la - end);
    const restB = start === 0 && end === 0 ? b : b.slice(start, lb - end);
    if (!this.#charge(levenshteinCost(restA.length, restB.length))) return -1;
    const score = 1 - distance(restA, restB) / max;
    return atLeast(score, threshold) ? score : -1;
  }

  #charge(units: number): boolean {
    this.#budget -= units;
    if (this.#budget >= 0) return true;
    this.exhausted = true;
    return false;
  }

  /** Whether the common character multiset of `a` and `b` has at least `need` characters. */
  #commonAtLeast(a: string, b: string, need: number): boolean {
    if (need <= 0) return true;
    const counts = this.#counts;
    for (let i = 0; i < a.length; i++) {
      const bucket = a.charCodeAt(i) & (BUCKETS - 1);
      counts[bucket] = (counts[bucket] as number) + 1;
    }
    let common = 0;
    // Characters of b that found no partner: once too many, stop.
    let misses = 0;
    const maxMisses = b.length - need;
    for (let i = 0; i < b.length; i++) {
      const bucket = b.charCodeAt(i) & (BUCKETS - 1);
      const left = counts[bucket] as number;
      if (left > 0) {
        counts[bucket] = left - 1;
        common++;
      } else if (++misses > maxMisses) {
        break;
      }
    }
    counts.fill(0);
    return common >= need;
  }
}
