import type { BudgetPeriod } from '@tether/protocol';

/**
 * The UTC periods the ledger and the budgets count over. A day is `YYYY-MM-DD`, a month `YYYY-MM`,
 * both of the UTC calendar: a tenant's day resets at midnight UTC wherever it is.
 */

/** The UTC day of an instant (epoch ms), `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The UTC month of an instant (epoch ms), `YYYY-MM`. */
export function utcMonth(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** The period (`day` or `month`) an instant falls in, as the ledger names it. */
export function periodOf(period: BudgetPeriod, ms: number): string {
  return period === 'day' ? utcDay(ms) : utcMonth(ms);
}

/** When the period an instant falls in ends (epoch ms): the next UTC midnight, or the next month's first. */
export function periodEnd(period: BudgetPeriod, ms: number): number {
  const at = new Date(ms);
  return period === 'day'
    ? Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1)
    : Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
}

/** The epoch ms of a `YYYY-MM-DD` day's midnight UTC, or undefined when it is no calendar day. */
export function dayStart(day: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!match) return undefined;
  const [year, month, date] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const ms = Date.UTC(year, month - 1, date);
  return utcDay(ms) === day ? ms : undefined;
}

/** Every UTC day from `from` to `to` (epoch ms of their midnights), inclusive, oldest first. */
export function daysBetween(from: number, to: number): string[] {
  const days: string[] = [];
  for (let ms = from; ms <= to; ms += 86_400_000) days.push(utcDay(ms));
  return days;
}
