/**
 * Answers must not depend on input size. The issue bounds the work of the approximate strategies by
 * pruning (anchors, lengths, early exit on the threshold), which never changes an answer; for content
 * <= 1 MB and a pattern <= 200 lines the rules' answer is the answer. These inputs put many near-miss
 * candidates before a genuine match.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_OPTIONS, fuzzyFindAll, fuzzyReplace } from './index.js';
import { findMatches, SearchContext } from './strategies.js';

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

describe('a fast miss', () => {
  /** mulberry32: integer arithmetic, so long runs do not lose precision and cycle. */
  function rng(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  const WORDS = ['user', 'record', 'value', 'total', 'config', 'result', 'buffer', 'index', 'token', 'entry'];
  const CALLS = ['compute', 'validate', 'render', 'merge', 'notify'];

  /** `count` source-like lines from a few templates, identifiers numbered at random, some blank. */
  function sourceLines(next: () => number, count: number): string[] {
    const pick = (list: string[]) => list[Math.floor(next() * list.length)] as string;
    const id = () => `${pick(WORDS)}${Math.floor(next() * 1000)}`;
    return Array.from({ length: count }, () => {
      const indent = '  '.repeat(1 + Math.floor(next() * 3));
      switch (Math.floor(next() * 5)) {
        case 0:
          return `${indent}const ${id()} = ${pick(CALLS)}(${id()}, ${Math.floor(next() * 100)});`;
        case 1:
          return `${indent}if (${id()} > ${Math.floor(next() * 500)}) {`;
        case 2:
          return `${indent}return ${pick(CALLS)}(${id()}.${pick(WORDS)});`;
        case 3:
          return '';
        default:
          return `${indent}${id()}.${pick(WORDS)} = await ${pick(CALLS)}(${id()});`;
      }
    });
  }

  it('a 40-line search of which no line is in a 10,000-line file: no Levenshtein, NO_MATCH with candidates', () => {
    const next = rng(40);
    const lines = sourceLines(next, 10_000);
    const present = new Set(lines.map((l) => l.trim()));
    const search = sourceLines(next, 200)
      .filter((l) => l.trim() !== '' && !present.has(l.trim()))
      .slice(0, 40)
      .join('\n');
    const content = lines.join('\n');

    // Every strategy's necessary condition fails for every window: nothing gets past the length bounds.
    const ctx = new SearchContext(content, search, DEFAULT_OPTIONS);
    expect(findMatches(ctx)).toBeUndefined();
    expect(ctx.filter.spent).toBe(0);

    const r = fuzzyReplace(content, search, 'replaced();');
    if (r.ok) throw new Error('expected NO_MATCH');
    expect(r.code).toBe('NO_MATCH');
    expect(r.candidates?.length).toBeGreaterThan(0);
    for (const c of r.candidates ?? []) {
      expect(c.text).toBe(lines[c.line - 1]);
      expect(c.searchLine).toBe(1);
    }
  });

  it('one line of a 40-line search changed: the candidate is that line, found by the lines around it', () => {
    const next = rng(41);
    const lines = sourceLines(next, 10_000);
    const window = lines.slice(6_000, 6_040);
    const k = window.findIndex((l, i) => i > 20 && l.trim() !== '');
    const search = window.map((l, i) => (i === k ? `${l.trim()} // and something else entirely` : l));
    const r = fuzzyReplace(lines.join('\n'), search.join('\n'), 'replaced();');
    if (r.ok) throw new Error('expected NO_MATCH');
    expect(r.candidates?.[0]).toEqual({
      line: 6_000 + k + 1,
      text: lines[6_000 + k],
      searchLine: k + 1,
      searchText: search[k],
    });
  });
});

describe('a repetitive file', () => {
  it('100,000 `}` lines and a 200-line search of `}` but one line: NO_MATCH, no window compared by Levenshtein', () => {
    const content = Array<string>(100_000).fill('}').join('\n');
    for (const at of [0, 100, 199]) {
      const lines = Array<string>(200).fill('}');
      lines[at] = 'x';
      const search = lines.join('\n');
      const ctx = new SearchContext(content, search, DEFAULT_OPTIONS);
      expect(findMatches(ctx)).toBeUndefined();
      expect(ctx.filter.spent).toBe(0);
      expect(fuzzyReplace(content, search, 'y')).toMatchObject({ ok: false, code: 'NO_MATCH' });
    }
  });
});
