/**
 * Answers must not depend on input size. The issue bounds the work of the approximate strategies by
 * pruning (anchors, lengths, early exit on the threshold), which never changes an answer; for content
 * <= 1 MB and a pattern <= 200 lines the rules' answer is the answer. These inputs put many near-miss
 * candidates before a genuine match.
 */
import { describe, expect, it } from 'vitest';
import { fuzzyFindAll, fuzzyReplace } from './index.js';

/** A deterministic pseudo-random source, so the inputs are the same on every run. */
function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

function randomWord(next: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += 'abcdefghijklmnopqrstuvwxyz'[Math.floor(next() * 26)];
  return out;
}

describe('large inputs', () => {
  it('block_anchor: a 200-line pattern is found after 8 anchor pairs whose middles fail', () => {
    const next = lcg(7);
    const middle = Array.from({ length: 198 }, () => randomWord(next, 40));
    const pattern = ['BEGIN_BLOCK', ...middle, 'END_BLOCK'].join('\n');
    // Same anchors, same lines in reverse order: same length and characters, similarity far below 0.6.
    const decoy = ['BEGIN_BLOCK', ...[...middle].reverse(), 'END_BLOCK'].join('\n');
    const real = ['BEGIN_BLOCK', ...middle.map((l, i) => (i === 5 ? `Z${l.slice(1)}` : l)), 'END_BLOCK'].join(
      '\n',
    );
    const content = [...Array<string>(8).fill(decoy), real].join('\n');
    expect(content.length).toBeLessThan(100_000);

    const found = fuzzyFindAll(content, pattern);
    const start = content.length - real.length;
    expect(found.map((m) => [m.strategy, m.startIndex, m.endIndex])).toEqual([
      ['block_anchor', start, content.length],
    ]);
    expect(found[0]?.similarity).toBeCloseTo(1 - 1 / (198 * 41 - 1), 9);
  });

  it('context_aware: a 40-line pattern is found after 10,000 lines that each score just below 0.8', () => {
    const line = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN';
    // Five adjacent swaps: same characters, Levenshtein 10 of 40, similarity 0.75.
    const chars = line.split('');
    for (let i = 0; i < 5; i++) {
      const a = chars[i * 4] as string;
      chars[i * 4] = chars[i * 4 + 1] as string;
      chars[i * 4 + 1] = a;
    }
    const filler = chars.join('');
    const near = `X${line.slice(1)}`; // similarity 0.975
    const lines = [...Array<string>(10_000).fill(filler), ...Array<string>(40).fill(near)];
    const content = lines.join('\n');
    const pattern = Array<string>(40).fill(line).join('\n');
    expect(content.length).toBeLessThan(1_000_000);

    // Every line must reach 0.8: only the near block itself matches.
    const first = 10_000;
    const found = fuzzyFindAll(content, pattern);
    expect(found.map((m) => [m.strategy, m.startIndex, m.endIndex])).toEqual([
      ['context_aware', first * 41, (first + 40) * 41 - 1],
    ]);
    expect(found[0]?.similarity).toBeCloseTo(0.975, 9);

    const replaced = fuzzyReplace(content, pattern, 'done');
    expect(replaced.ok).toBe(true);
  });
});
