import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BUDGET_LIMITS, UsageQuerySchema, UsageReportSchema } from '@tether/protocol';
import { dayStart, type UsageGroupBy, utcDay } from '@tether/store/budgets';
import { ApiError } from '../../errors.js';
import { COMMON_ERRORS } from '../schemas.js';

const DAY_MS = 86_400_000;

/** The range asked for, as the midnights (UTC, epoch ms) of its first and last days; 400 naming the field when it is not one. */
export function usageRange(query: { from?: string | undefined; to?: string | undefined }, now = Date.now()) {
  const day = (field: 'from' | 'to', value: string) => {
    const ms = dayStart(value);
    if (ms === undefined)
      throw new ApiError(
        'ERR_VALIDATION',
        `querystring.${field} is not a calendar day (YYYY-MM-DD), got ${JSON.stringify(value)}`,
      );
    return ms;
  };
  const to = query.to === undefined ? (dayStart(utcDay(now)) as number) : day('to', query.to);
  const from =
    query.from === undefined ? to - (BUDGET_LIMITS.usageDefaultDays - 1) * DAY_MS : day('from', query.from);
  if (from > to)
    throw new ApiError(
      'ERR_VALIDATION',
      `querystring.from (${utcDay(from)}) is after querystring.to (${utcDay(to)})`,
    );
  const days = (to - from) / DAY_MS + 1;
  if (days > BUDGET_LIMITS.usageMaxDays)
    throw new ApiError(
      'ERR_VALIDATION',
      `querystring.from to querystring.to spans ${days} days, more than ${BUDGET_LIMITS.usageMaxDays}: ask for a shorter range`,
    );
  return { from, to };
}

/** `GET /v1/usage`: what the tenant's runs used, from its ledger. */
const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['budgets'],
        operationId: 'getUsage',
        summary: "The tenant's usage over a range of days",
        description: `Tokens (input, output, total), US dollars (by the profiles' \`prices\`) and runs (counted on the day of their first model turn) of the tenant's model turns from \`from\` to \`to\` (UTC days, inclusive; default the last ${BUDGET_LIMITS.usageDefaultDays} days, at most ${BUDGET_LIMITS.usageMaxDays}), in \`totals\` and in \`rows\` by \`groupBy\`: \`day\` (the default: every day of the range, oldest first), \`model\`, \`profile\` or \`metadata.<key>\` (the runs' string value of that metadata key; runs without it count in \`totals\` only), most tokens first. The ledger keeps ${BUDGET_LIMITS.ledgerTtlDays} days.`,
        querystring: UsageQuerySchema,
        response: { 200: UsageReportSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const range = usageRange(request.query);
      const groupBy = (request.query.groupBy ?? 'day') as UsageGroupBy;
      return app.usage.report(request.tenant, { ...range, groupBy });
    },
  );
};

export default usageRoutes;
