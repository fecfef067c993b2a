import { parseEvery } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { cronTicks, knownTimeZone, timingProblem } from './schedule-timing.js';

const iso = (ticks: number[]) => ticks.map((tick) => new Date(tick).toISOString());
const paris = (cron: string, from: string, count: number) =>
  iso(cronTicks(cron, 'Europe/Paris', Date.parse(from), count));

describe('a cron pattern in Europe/Paris across the changes of 2026 (cron-parser, as BullMQ reads it)', () => {
  it('spring (29 March, 02:00 → 03:00): a daily 02:30 that does not exist fires once, at 03:30 CEST', () => {
    expect(paris('30 2 * * *', '2026-03-27T12:00:00Z', 4)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 03:30 CEST: the hour skipped, once
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
    // Hourly: one tick per real hour, none in the gap and none doubled.
    expect(paris('0 * * * *', '2026-03-28T23:30:00Z', 3)).toEqual([
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
  });

  it('autumn (25 October, 03:00 → 02:00): a daily 02:30 that happens twice fires once, the first time', () => {
    expect(paris('30 2 * * *', '2026-10-23T12:00:00Z', 4)).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST, the first of the two
      '2026-10-26T01:30:00.000Z', // 02:30 CET
      '2026-10-27T01:30:00.000Z',
    ]);
    // Minutes of the repeated hour fire in its first pass only.
    expect(paris('*/15 2 * * *', '2026-10-24T23:50:00Z', 5)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:15:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T00:45:00.000Z',
      '2026-10-26T01:00:00.000Z',
    ]);
    // Hourly: one tick per real hour through the repeated one.
    expect(paris('0 * * * *', '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });
});

describe('timingProblem', () => {
  const minute = 60_000;
  it('names the field and the bound', () => {
    expect(timingProblem({ timezone: 'UTC' }, minute)).toMatch(/^body\.cron, body\.every: give exactly one/);
    expect(timingProblem({ cron: '* * * * *', every: '1m', timezone: 'UTC' }, minute)).toMatch(/exactly one/);
    expect(timingProblem({ cron: '0 3 * * *', timezone: 'Europe/Pariss' }, minute)).toMatch(
      /^body\.timezone: unknown time zone "Europe\/Pariss"/,
    );
    expect(timingProblem({ cron: '61 * * * *', timezone: 'UTC' }, minute)).toMatch(
      /^body\.cron: "61 \* \* \* \*"/,
    );
    expect(timingProblem({ cron: '*/30 * * * * *', timezone: 'UTC' }, minute)).toBe(
      'body.cron: ticks 30000 ms apart; the shortest interval allowed is 60000 ms (TETHER_SCHEDULE_MIN_INTERVAL_MS).',
    );
    expect(timingProblem({ every: '59s', timezone: 'UTC' }, minute)).toMatch(
      /^body\.every: ticks 59000 ms apart/,
    );
    expect(timingProblem({ every: '1m', timezone: 'UTC' }, minute)).toBeUndefined();
    expect(timingProblem({ cron: '0 3 * * *', timezone: 'Europe/Paris' }, minute)).toBeUndefined();
    // Seconds in a pattern, when the bound allows them.
    expect(timingProblem({ cron: '* * * * * *', timezone: 'UTC' }, 1_000)).toBeUndefined();
  });

  it('checks the shortest interval of an irregular pattern, not its first', () => {
    // 00:00 and 00:01, then a day: the closest two are a minute apart.
    expect(timingProblem({ cron: '0,1 0 * * *', timezone: 'UTC' }, 2 * minute)).toMatch(
      /ticks 60000 ms apart/,
    );
  });

  it('knows IANA zones, and durations', () => {
    expect(knownTimeZone('America/New_York')).toBe(true);
    expect(knownTimeZone('Nowhere/Land')).toBe(false);
    expect([parseEvery('90s'), parseEvery('15m'), parseEvery('2h'), parseEvery('1d')]).toEqual([
      90_000, 900_000, 7_200_000, 86_400_000,
    ]);
    expect([parseEvery('0m'), parseEvery('1w'), parseEvery('1.5h'), parseEvery('m')]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
