import { type Static, Type } from '@sinclair/typebox';
import { EXPECTED } from './expected.js';

/**
 * Tenant budgets and the usage ledger (`/v1/budgets`, `/v1/usage`): what a tenant may spend per
 * UTC day and per UTC month, in tokens and in US dollars, and what it did spend.
 */

/** The periods a tenant's budget counts over: the UTC day and the UTC month. */
export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** What a budget counts: tokens (input and output together), or US dollars by the profiles' prices. */
export const BUDGET_UNITS = ['tokens', 'usd'] as const;
export type BudgetUnit = (typeof BUDGET_UNITS)[number];

/** Bounds of the budget and usage routes. */
export const BUDGET_LIMITS = {
  /** The largest token budget. */
  tokensMax: 1_000_000_000_000,
  /** The smallest money budget: one micro-dollar, the ledger's unit. */
  usdMin: 0.000_001,
  /** The largest money budget. */
  usdMax: 1_000_000_000,
  /** A tenant is warned once per period and budget when its use reaches this share of it. */
  warnAt: 0.8,
  /** The days one `GET /v1/usage` may span. */
  usageMaxDays: 400,
  /** The days `GET /v1/usage` spans without `from` (ending today). */
  usageDefaultDays: 30,
  /** How long the ledger keeps a day (and a month) of a tenant's usage after its last write. */
  ledgerTtlDays: 400,
} as const;

/** One period's limits: at least one of them. */
export const BudgetLimitsSchema = Type.Object(
  {
    /** Tokens (input and output together) the tenant's runs may use in the period. */
    tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: BUDGET_LIMITS.tokensMax })),
    /** US dollars the tenant's runs may spend in the period, by their profiles' `prices`. */
    usd: Type.Optional(Type.Number({ minimum: BUDGET_LIMITS.usdMin, maximum: BUDGET_LIMITS.usdMax })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type BudgetLimits = Static<typeof BudgetLimitsSchema>;

/**
 * A tenant's budgets (`PUT /v1/budgets`, and each tenant's entry of `TETHER_TENANT_BUDGETS`): per
 * UTC day and per UTC month, at least one limit in all.
 */
export const TenantBudgetsSchema = Type.Object(
  {
    day: Type.Optional(BudgetLimitsSchema),
    month: Type.Optional(BudgetLimitsSchema),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type TenantBudgets = Static<typeof TenantBudgetsSchema>;

/** What a tenant used in one period so far, and when the period ends. */
export const PeriodUseSchema = Type.Object({
  tokens: Type.Integer({ minimum: 0 }),
  usd: Type.Number({ minimum: 0 }),
  /** When the period ends and its use starts again from 0. */
  resetsAt: Type.String({ format: 'date-time' }),
});
export type PeriodUse = Static<typeof PeriodUseSchema>;

/**
 * `GET` and `PUT /v1/budgets`: the budgets in force for the tenant and where they come from (`api`:
 * set with `PUT`, which wins; `env`: the operator's `TETHER_TENANT_BUDGETS`; null: none), with
 * what the tenant used so far today and this month.
 */
export const TenantBudgetsViewSchema = Type.Object({
  budgets: Type.Union([TenantBudgetsSchema, Type.Null()]),
  source: Type.Union([Type.Literal('api'), Type.Literal('env'), Type.Null()]),
  /** When the tenant's own budgets were last set; null unless `source` is `api`. */
  updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  used: Type.Object({ day: PeriodUseSchema, month: PeriodUseSchema }),
});
export type TenantBudgetsView = Static<typeof TenantBudgetsViewSchema>;

/**
 * The `budget.warning` event: a turn of the run brought its tenant's use to 80% of a budget or
 * more, the first time in the period (once per tenant, period and budget).
 */
export const BudgetWarningSchema = Type.Object({
  period: Type.Union(BUDGET_PERIODS.map((period) => Type.Literal(period))),
  unit: Type.Union(BUDGET_UNITS.map((unit) => Type.Literal(unit))),
  limit: Type.Number({ minimum: 0 }),
  used: Type.Number({ minimum: 0 }),
  /** `used` as a percentage of `limit`, rounded down. */
  percent: Type.Integer({ minimum: 0 }),
  resetsAt: Type.String({ format: 'date-time' }),
});
export type BudgetWarning = Static<typeof BudgetWarningSchema>;

/** A UTC date, `YYYY-MM-DD`. */
export const USAGE_DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

/** `groupBy` of `GET /v1/usage`: `day`, `model`, `profile` or `metadata.<key>`. */
export const USAGE_GROUP_BY_PATTERN = '^(day|model|profile|metadata\\..{1,128})$';

/** `GET /v1/usage`'s query. */
export const UsageQuerySchema = Type.Object(
  {
    /** The first day (UTC, inclusive); default 29 days before `to`. */
    from: Type.Optional(Type.String({ pattern: USAGE_DATE_PATTERN, [EXPECTED]: 'a date, YYYY-MM-DD' })),
    /** The last day (UTC, inclusive); default today. */
    to: Type.Optional(Type.String({ pattern: USAGE_DATE_PATTERN, [EXPECTED]: 'a date, YYYY-MM-DD' })),
    groupBy: Type.Optional(
      Type.String({
        pattern: USAGE_GROUP_BY_PATTERN,
        [EXPECTED]: 'day, model, profile or metadata.<key>',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UsageQuery = Static<typeof UsageQuerySchema>;

/** Usage summed over some model turns. */
export const UsageTotalsSchema = Type.Object({
  inputTokens: Type.Integer({ minimum: 0 }),
  outputTokens: Type.Integer({ minimum: 0 }),
  totalTokens: Type.Integer({ minimum: 0 }),
  /** US dollars, by the profiles' prices (turns of profiles without prices count 0). */
  costUsd: Type.Number({ minimum: 0 }),
  /** Runs whose first model turn falls in the range (and group). */
  runs: Type.Integer({ minimum: 0 }),
});
export type UsageTotals = Static<typeof UsageTotalsSchema>;

/** One group of `GET /v1/usage`: a day (`YYYY-MM-DD`), a model, a profile or a metadata value. */
export const UsageRowSchema = Type.Intersect([Type.Object({ key: Type.String() }), UsageTotalsSchema]);
export type UsageRow = Static<typeof UsageRowSchema>;

/**
 * `GET /v1/usage`: the tenant's usage from `from` to `to` (UTC days, inclusive), in total and by
 * `groupBy`: every day of the range (oldest first), or each model, profile or metadata value seen
 * (most tokens first).
 */
export const UsageReportSchema = Type.Object({
  from: Type.String(),
  to: Type.String(),
  groupBy: Type.String(),
  totals: UsageTotalsSchema,
  rows: Type.Array(UsageRowSchema),
});
export type UsageReport = Static<typeof UsageReportSchema>;
