export {
  type BudgetUse,
  budgetsToWarn,
  budgetUses,
  exceededBudget,
  type LedgerTotals,
  MICROS_PER_USD,
  percentUsed,
  tenantBudgetExceeded,
} from './budget-check.js';
export { dayStart, periodEnd, periodOf, utcDay, utcMonth } from './periods.js';
export {
  type BudgetsInForce,
  type StoredTenantBudgets,
  TenantBudgetStore,
  type TenantBudgetStoreOptions,
  usedUpBudget,
} from './tenant-budget-store.js';
export { type TurnUsage, type UsageGroupBy, UsageLedger, type UsageLedgerOptions } from './usage-ledger.js';
