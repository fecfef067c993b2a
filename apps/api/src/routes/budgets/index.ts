import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, TenantBudgetsSchema, TenantBudgetsViewSchema } from '@tether/protocol';
import { type BudgetsInForce, type LedgerTotals, MICROS_PER_USD, periodEnd } from '@tether/store/budgets';
import type { FastifyInstance } from 'fastify';
import { COMMON_ERRORS } from '../schemas.js';

/** The route's answer: the budgets in force, where they come from, and what the tenant used. */
async function view(app: FastifyInstance, tenant: string, inForce: BudgetsInForce | undefined) {
  const now = Date.now();
  const totals: LedgerTotals = await app.usage.totals(tenant, now);
  const use = (period: 'day' | 'month') => ({
    tokens: totals[period].tokens,
    usd: totals[period].micros / MICROS_PER_USD,
    resetsAt: new Date(periodEnd(period, now)).toISOString(),
  });
  return {
    budgets: inForce?.budgets ?? null,
    source: inForce?.source ?? null,
    updatedAt: inForce?.source === 'api' ? new Date(inForce.updatedAt).toISOString() : null,
    used: { day: use('day'), month: use('month') },
  };
}

/**
 * `/v1/budgets`: the tenant's budgets per UTC day and month, in tokens and US dollars. Its own (set
 * here) win over the operator's default for it (`TETHER_TENANT_BUDGETS`), as a whole. A tenant at
 * or past a budget has its submissions refused (402) and its running runs stopped at their next
 * turn boundary. API keys only (the default `key` auth): neither a read token nor a session token.
 */
const budgetRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['budgets'],
        operationId: 'getBudgets',
        summary: "Read the tenant's budgets and what it used of them",
        description:
          "`budgets` in force and their `source` (`api`: set with PUT; `env`: the operator's `TETHER_TENANT_BUDGETS`; null: none), with the tokens and US dollars used today and this month (UTC) and when each resets.",
        response: { 200: TenantBudgetsViewSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => view(app, request.tenant, await app.budgets.get(request.tenant)),
  );

  app.put(
    '/',
    {
      schema: {
        tags: ['budgets'],
        operationId: 'setBudgets',
        summary: "Set the tenant's budgets",
        description:
          "`day` and/or `month`, each with `tokens` (input and output together) and/or `usd` (by the profiles' `prices`): positive, at least one, nothing else. They replace the tenant's budgets before (and the operator's default for it) as a whole. At 80% of a budget a `budget.warning` event goes out once per period; at 100% submissions are refused with 402 `ERR_TENANT_BUDGET_EXCEEDED` and running runs fail with it at their next turn boundary. Every API process and worker uses them within moments.",
        body: TenantBudgetsSchema,
        response: {
          200: TenantBudgetsViewSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      const stored = await app.budgets.save(request.tenant, request.body);
      return view(app, request.tenant, { ...stored, source: 'api' });
    },
  );

  app.delete(
    '/',
    {
      schema: {
        tags: ['budgets'],
        operationId: 'deleteBudgets',
        summary: "Remove the tenant's own budgets",
        description:
          "204 whether or not there were any: the operator's default for the tenant (`TETHER_TENANT_BUDGETS`) applies again, if it has one, else none.",
        response: { 204: Type.Null(), ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await app.budgets.remove(request.tenant);
      return reply.code(204).send(null);
    },
  );
};

export default budgetRoutes;
