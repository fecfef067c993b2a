import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './retry-after.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  it('reads seconds (fractions rounded up to the ms) and HTTP dates', () => {
    expect(parseRetryAfter('2', now)).toBe(2_000);
    expect(parseRetryAfter(' 0.25 ', now)).toBe(250);
    expect(parseRetryAfter('0.0001', now)).toBe(1);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:03 GMT', now)).toBe(3_000);
  });

  it('treats a past date as no wait, and nonsense, negatives or nothing as not said', () => {
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:59:00 GMT', now)).toBe(0);
    for (const value of ['soon', '-5', '1e3', '0x10', '', '   ', null, undefined]) {
      expect(parseRetryAfter(value, now), String(value)).toBeUndefined();
    }
  });
});
