import { describe, expect, it } from 'vitest';
import { compareEventIds, cursorProblem, MAX_ID_PART } from './event-ids.js';

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

describe('cursorProblem', () => {
  it.each([
    '0',
    '0-0',
    '1700000000000-0',
    `${MAX_ID_PART}-${MAX_ID_PART}`,
    `0${MAX_ID_PART.slice(1)}-1`,
    '00000000000000000001-00000000000000000002',
  ])('accepts %s', (cursor) => {
    expect(cursorProblem(cursor)).toBeUndefined();
  });

  it.each(['18446744073709551616-0', '0-18446744073709551616', '99999999999999999999-99999999999999999999'])(
    'refuses %s as out of range',
    (cursor) => {
      expect(cursorProblem(cursor)).toMatch(/out of range.*18446744073709551615/);
    },
  );

  it.each(['', 'abc', '1-', '-1', '1-2-3', '123456789012345678901-0', '1'])(
    'refuses %j as malformed',
    (cursor) => {
      expect(cursorProblem(cursor)).toMatch(/not an event id/);
    },
  );
});
