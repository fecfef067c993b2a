import { BUDGET_LIMITS, BUDGET_PERIODS, BUDGET_UNITS, type TenantBudgets } from '@tether/protocol';

const TENANT = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Parses `TETHER_TENANT_BUDGETS`: a JSON object of budgets by tenant,
 * `{ "<tenant>": { "day": { "tokens": n, "usd": n }, "month": { … } } }`, each tenant's entry
 * checked as `PUT /v1/budgets` checks its body (a period or a limit unknown, a limit not a positive
 * number within its bounds, nothing set). Every problem goes to `problem`, naming the tenant and
 * the field. A tenant's own budgets (`PUT /v1/budgets`) replace its entry here as a whole.
 */
export function parseTenantBudgets(
  raw: string | undefined,
  problem: (message: string) => void,
): Readonly<Record<string, TenantBudgets>> {
  if (raw === undefined || raw.trim() === '') return Object.freeze({});
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    problem(`TETHER_TENANT_BUDGETS is not JSON: ${error instanceof Error ? error.message : String(error)}`);
    return Object.freeze({});
  }
  if (!isObject(parsed)) {
    problem(
      'TETHER_TENANT_BUDGETS must be a JSON object of budgets by tenant, {"acme": {"day": {"tokens": 1000000}}}',
    );
    return Object.freeze({});
  }
  const budgets: Record<string, TenantBudgets> = {};
  for (const [tenant, entry] of Object.entries(parsed)) {
    const at = `TETHER_TENANT_BUDGETS.${tenant}`;
    if (!TENANT.test(tenant)) {
      problem(`${at}: a tenant is 1 to 64 letters, digits, _ or -`);
      continue;
    }
    const problems = budgetProblems(entry, at);
    for (const message of problems) problem(message);
    if (problems.length === 0) budgets[tenant] = entry as TenantBudgets;
  }
  return Object.freeze(budgets);
}

/** What is wrong with one tenant's budgets, each problem naming its field (`at` and the path). */
function budgetProblems(entry: unknown, at: string): string[] {
  if (!isObject(entry) || Object.keys(entry).length === 0)
    return [`${at} must be an object with "day" and/or "month"`];
  const problems: string[] = [];
  for (const [period, limits] of Object.entries(entry)) {
    const field = `${at}.${period}`;
    if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
      problems.push(`${field}: unknown period (known: ${BUDGET_PERIODS.join(', ')})`);
      continue;
    }
    if (!isObject(limits) || Object.keys(limits).length === 0) {
      problems.push(`${field} must be an object with "tokens" and/or "usd"`);
      continue;
    }
    for (const [unit, value] of Object.entries(limits)) {
      const problem = limitProblem(unit, value);
      if (problem) problems.push(`${field}.${unit}: ${problem}`);
    }
  }
  return problems;
}

function limitProblem(unit: string, value: unknown): string | undefined {
  if (!(BUDGET_UNITS as readonly string[]).includes(unit))
    return `unknown limit (known: ${BUDGET_UNITS.join(', ')})`;
  if (unit === 'tokens') {
    return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= BUDGET_LIMITS.tokensMax
      ? undefined
      : `must be an integer from 1 to ${BUDGET_LIMITS.tokensMax}, got ${JSON.stringify(value)}`;
  }
  return typeof value === 'number' && value >= BUDGET_LIMITS.usdMin && value <= BUDGET_LIMITS.usdMax
    ? undefined
    : `must be a number of US dollars from ${BUDGET_LIMITS.usdMin} to ${BUDGET_LIMITS.usdMax}, got ${JSON.stringify(value)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
