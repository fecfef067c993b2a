import { describe, expect, it } from 'vitest';
import { compareEventIds } from './event-ids.js';

describe('compareEventIds', () => {
  it.each([
    ['1-0', '1-0', 0],
    ['1-0', '1-1', -1],
    ['9-0', '10-0', -1],
    ['1700000000000-9', '1700000000000-10', -1],
    ['1700000000001-0', '1700000000000-99', 1],
    ['0', '1-0', -1],
    ['18446744073709551615-1', '18446744073709551615-0', 1],
    ['007-1', '7-1', 0],
  ])('%s vs %s → %i', (a, b, expected) => {
    expect(Math.sign(compareEventIds(a, b))).toBe(expected);
  });

  it('refuses what is not an event id', () => {
    expect(() => compareEventIds('abc', '1-0')).toThrow(RangeError);
  });
});
