import { describe, expect, it } from 'vitest';
import { duration, runDuration, timeUntil, tokens, usd } from './format.js';

describe('the console formats', () => {
  it('says a duration in the unit a person reads it in', () => {
    expect(duration(0)).toBe('0 ms');
    expect(duration(849.6)).toBe('850 ms');
    expect(duration(1_000)).toBe('1.0 s');
    expect(duration(12_460)).toBe('12.4 s');
    expect(duration(59_999)).toBe('59.9 s');
    expect(duration(184_000)).toBe('3 min 4 s');
    expect(duration(7_500_000)).toBe('2 h 5 min');
  });

  it('measures a run from its start to its end, or to now while it runs, and nothing before it starts', () => {
    const now = Date.parse('2026-01-01T00:01:00Z');
    expect(runDuration({}, now)).toBeUndefined();
    expect(runDuration({ startedAt: '2026-01-01T00:00:00Z' }, now)).toBe(60_000);
    expect(
      runDuration({ startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:00:02.500Z' }, now),
    ).toBe(2_500);
  });

  it('shortens token counts', () => {
    expect(tokens(980)).toBe('980');
    expect(tokens(1_234)).toBe('1.23k');
    expect(tokens(12_345)).toBe('12.3k');
    expect(tokens(1_250_000)).toBe('1.25M');
  });

  it('writes costs in US dollars: cents from a dollar up, two significant digits below', () => {
    expect(usd(0)).toBe('$0');
    expect(usd(0.0052)).toBe('$0.0052');
    expect(usd(0.031)).toBe('$0.031');
    expect(usd(0.5)).toBe('$0.5');
    expect(usd(12.3456)).toBe('$12.35');
  });

  it('says how long until a time, and "now" once it is past', () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    const at = (ms: number) => new Date(now + ms).toISOString();
    expect(
      [at(-5_000), at(0), at(5_000), at(180_000), at(7_200_000), at(5 * 86_400_000)].map((iso) =>
        timeUntil(iso, now),
      ),
    ).toEqual(['now', 'now', 'in 5 s', 'in 3 min', 'in 2 h', 'in 5 d']);
  });
});
