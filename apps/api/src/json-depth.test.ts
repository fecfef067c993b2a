import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDeeperThan } from './json-depth.js';

/** The depth by the definition: a parsed value's nesting, counted recursively (fine for test sizes). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depthOf(child)), 0);
}

describe('jsonDeeperThan', () => {
  it.each([
    ['1', 0, false],
    ['"x"', 0, false],
    ['{}', 0, true],
    ['{}', 1, false],
    ['[[]]', 1, true],
    ['[[]]', 2, false],
    ['{"a":[1,{"b":2}],"c":{}}', 3, false],
    ['{"a":[1,{"b":2}],"c":{}}', 2, true],
    // Brackets inside strings are text, escaped quotes do not end a string, an escaped backslash does not escape the quote.
    ['{"a":"[[[[{{{{"}', 1, false],
    ['{"a":"\\"[[[["}', 1, false],
    ['{"a":"\\\\","b":[[]]}', 2, true],
    ['["\\u005b[["]', 1, false],
    ['["\\\\\\"[",[]]', 1, true],
    ['["unterminated [[[', 0, true],
    ['"unterminated [[[', 0, false],
  ])('%s deeper than %i: %s', (text, max, expected) => {
    expect(jsonDeeperThan(text, max)).toBe(expected);
  });

  it('finds a depth of 100,000 without recursion', () => {
    const text = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(jsonDeeperThan(text, 64)).toBe(true);
    expect(jsonDeeperThan(text, 100_000)).toBe(false);
  });

  it('agrees with the depth of the parsed value, for any JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, max) => {
        const text = JSON.stringify(value);
        expect(jsonDeeperThan(text, max)).toBe(depthOf(value) > max);
      }),
      { numRuns: 500 },
    );
  });
});
