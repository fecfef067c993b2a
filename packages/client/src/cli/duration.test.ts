import { describe, expect, it } from 'vitest';
import { formatCountdown, formatDuration, parseDuration } from './duration.js';
import { UsageError } from './exit-codes.js';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['500ms', 500],
    ['2500', 2_500],
    [' 10M ', 600_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'soon', '-5s', '10 m', '1d', 'm', '0s', '0', '1.5'])(
    'refuses "%s" with a UsageError naming the flag',
    (text) => {
      expect(() => parseDuration(text, '--timeout')).toThrow(UsageError);
      expect(() => parseDuration(text, '--timeout')).toThrow(/--timeout/);
    },
  );

  it('refuses more than the maximum', () => {
    expect(() => parseDuration('2h', '--timeout', 3_600_000)).toThrow(/at most 1h/);
    expect(parseDuration('24h')).toBe(86_400_000);
  });
});

describe('formatDuration and formatCountdown', () => {
  it('formats durations for people', () => {
    expect(formatDuration(450)).toBe('450ms');
    expect(formatDuration(90_000)).toBe('1m 30s');
    expect(formatDuration(3_600_000)).toBe('1h');
  });

  it('formats a countdown, rounding up and stopping at zero', () => {
    expect(formatCountdown(245_001)).toBe('4:06');
    expect(formatCountdown(3_723_000)).toBe('1:02:03');
    expect(formatCountdown(-5)).toBe('0:00');
  });
});
