import { BUDGET_LIMITS, type BudgetPeriod, type BudgetUnit, type TenantBudgets } from '@tether/protocol';
import { QueueError } from '../errors.js';
import { periodEnd } from './periods.js';

/** The ledger's unit of money: a micro-dollar, so that every increment is an integer. */
export const MICROS_PER_USD = 1_000_000;

/** What a tenant used so far today and this month (UTC): tokens, and micro-dollars. */
export interface LedgerTotals {
  day: { tokens: number; micros: number };
  month: { tokens: number; micros: number };
}

/** One budget of a tenant against what it used: `used` and `limit` in the budget's unit. */
export interface BudgetUse {
  period: BudgetPeriod;
  unit: BudgetUnit;
  limit: number;
  used: number;
  /** When the period ends (epoch ms). */
  resetsAt: number;
}

/** Each budget the tenant has (day and month, tokens and usd), with what it used of it at `now`. */
export function budgetUses(budgets: TenantBudgets, totals: LedgerTotals, now: number): BudgetUse[] {
  const uses: BudgetUse[] = [];
  for (const period of ['day', 'month'] as const) {
    const limits = budgets[period];
    if (!limits) continue;
    const resetsAt = periodEnd(period, now);
    const { tokens, micros } = totals[period];
    if (limits.tokens !== undefined)
      uses.push({ period, unit: 'tokens', limit: limits.tokens, used: tokens, resetsAt });
    if (limits.usd !== undefined)
      uses.push({ period, unit: 'usd', limit: limits.usd, used: micros / MICROS_PER_USD, resetsAt });
  }
  return uses;
}

/** The first budget used up (its use at or past its limit), if any. */
export function exceededBudget(uses: readonly BudgetUse[]): BudgetUse | undefined {
  return uses.find((use) => use.used >= use.limit);
}

/** The budgets at or past the warning share of their limit (80%). */
export function budgetsToWarn(uses: readonly BudgetUse[]): BudgetUse[] {
  return uses.filter((use) => use.used >= use.limit * BUDGET_LIMITS.warnAt);
}

/** `used` as a whole percentage of `limit`, rounded down. */
export function percentUsed(use: BudgetUse): number {
  return Math.floor((use.used / use.limit) * 100);
}

const PERIOD_WORDS = { day: 'daily', month: 'monthly' } as const;

/** 402 `ERR_TENANT_BUDGET_EXCEEDED`, naming the budget (`day.tokens`…) and when it resets. */
export function tenantBudgetExceeded(use: BudgetUse): QueueError {
  const amount = (value: number) => (use.unit === 'usd' ? `$${Number(value.toFixed(6))}` : `${value}`);
  const unit = use.unit === 'usd' ? 'US dollar' : 'token';
  return new QueueError(
    'ERR_TENANT_BUDGET_EXCEEDED',
    `The tenant has used its ${PERIOD_WORDS[use.period]} ${unit} budget (${use.period}.${use.unit}): ${amount(use.used)} of ${amount(use.limit)}. It resets at ${new Date(use.resetsAt).toISOString()}.`,
  );
}
