import { parseEvery } from '@tether/protocol';
import { CronExpressionParser } from 'cron-parser';

/**
 * When a schedule ticks: a cron pattern read in a time zone, or an interval. The next tick is
 * computed as BullMQ's job schedulers compute it (cron-parser for a pattern, the interval from the
 * scheduler's last tick for `every`), so what is checked here is what BullMQ will do.
 */
export interface ScheduleTiming {
  cron?: string | undefined;
  every?: string | undefined;
  timezone: string;
}

/** How many ticks of a cron pattern are looked at for the shortest interval between two. */
const CRON_SAMPLE = 16;

/** Whether `timezone` is a zone this process knows (IANA names, as `Intl` and cron-parser read them). */
export function knownTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * What is wrong with a schedule's timing, naming the field, or undefined: exactly one of `cron`
 * and `every`, a zone that exists, a pattern cron-parser reads, and no two ticks closer than
 * `minIntervalMs` (for a pattern, among its next {@link CRON_SAMPLE} ticks).
 */
export function timingProblem(
  timing: ScheduleTiming,
  minIntervalMs: number,
  now = Date.now(),
): string | undefined {
  const { cron, every, timezone } = timing;
  if ((cron === undefined) === (every === undefined)) {
    return 'body.cron, body.every: give exactly one of them (a cron pattern, or an interval such as 15m).';
  }
  if (!knownTimeZone(timezone)) {
    return `body.timezone: unknown time zone ${JSON.stringify(timezone)}; use an IANA name such as UTC or Europe/Paris.`;
  }
  const interval =
    every !== undefined ? parseEvery(every) : shortestCronInterval(cron as string, timezone, now);
  if (typeof interval === 'string') return `body.cron: ${interval}`;
  if (interval === undefined)
    return `body.every: ${JSON.stringify(every)} is not a duration such as 90s, 15m, 2h or 1d.`;
  if (interval < minIntervalMs) {
    const field = every !== undefined ? 'body.every' : 'body.cron';
    return `${field}: ticks ${interval} ms apart; the shortest interval allowed is ${minIntervalMs} ms (TETHER_SCHEDULE_MIN_INTERVAL_MS).`;
  }
  return undefined;
}

/** The next ticks of a cron pattern in a zone after `afterMs`, as BullMQ computes each (epoch ms). */
export function cronTicks(cron: string, timezone: string, afterMs: number, count: number): number[] {
  const ticks: number[] = [];
  let from = afterMs;
  // One parse per tick, from the last one, as BullMQ's scheduler does at each tick.
  for (let i = 0; i < count; i++) {
    const next = CronExpressionParser.parse(cron, { tz: timezone, currentDate: new Date(from) })
      .next()
      .getTime();
    ticks.push(next);
    from = next;
  }
  return ticks;
}

/** The shortest interval between two of the next ticks, or why the pattern is refused. */
function shortestCronInterval(cron: string, timezone: string, now: number): number | string {
  let ticks: number[];
  try {
    ticks = cronTicks(cron, timezone, now, CRON_SAMPLE);
  } catch (error) {
    return `${JSON.stringify(cron)} is not a cron pattern (${error instanceof Error ? error.message : String(error)}); use 5 fields, or 6 with leading seconds, such as "0 3 * * *".`;
  }
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < ticks.length; i++)
    shortest = Math.min(shortest, (ticks[i] as number) - (ticks[i - 1] as number));
  return shortest;
}

/** A schedule's interval in ms (`every`), or its shortest one over the next ticks (`cron`). */
export function scheduleIntervalMs(timing: ScheduleTiming, now = Date.now()): number {
  if (timing.every !== undefined) return parseEvery(timing.every) ?? 0;
  const interval = shortestCronInterval(timing.cron as string, timing.timezone, now);
  return typeof interval === 'number' ? interval : 0;
}
