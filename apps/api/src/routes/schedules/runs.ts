import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, EXPECTED, SCHEDULE_LIMITS, ScheduleRunPageSchema } from '@tether/protocol';
import type { RunRecord } from '@tether/store/runs';
import { toRun } from '../runs/run-view.js';
import { COMMON_ERRORS } from '../schemas.js';
import { ScheduleParamsSchema } from './params.js';
import { scheduleOf } from './schedules.js';

const RunsQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SCHEDULE_LIMITS.pageMaxLimit, default: 20 })),
  cursor: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,9}$', [EXPECTED]: 'the nextCursor of the page before (digits)' }),
  ),
});

/** `GET /v1/schedules/:name/runs`: the runs a schedule made, newest tick first. */
const scheduleRunsRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:name/runs',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'listScheduleRuns',
        summary: 'List the runs a schedule made',
        description:
          'Newest tick first, `limit` at a time (`nextCursor` for the next page). Runs past their retention are left out.',
        params: ScheduleParamsSchema,
        querystring: RunsQuerySchema,
        response: { 200: ScheduleRunPageSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const { tenant } = request;
      await scheduleOf(app, tenant, request.params.name);
      const { ids, nextCursor } = await app.schedules.runIds(tenant, request.params.name, {
        cursor: request.query.cursor === undefined ? undefined : Number(request.query.cursor),
        limit: request.query.limit ?? 20,
      });
      const records = await app.store.getMany(ids);
      const runs = records.filter((run): run is RunRecord => run !== undefined && run.tenant === tenant);
      return { data: runs.map(toRun), nextCursor: nextCursor === null ? null : String(nextCursor) };
    },
  );
};

export default scheduleRunsRoute;
