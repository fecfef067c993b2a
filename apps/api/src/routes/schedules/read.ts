import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, ScheduleListSchema, ScheduleSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { ScheduleParamsSchema } from './params.js';
import { scheduleOf, scheduleView } from './schedules.js';

/** `GET /v1/schedules` and `GET /v1/schedules/:name`. */
const readScheduleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'listSchedules',
        summary: "List the tenant's schedules",
        description: 'By name, each with `nextRunAt`, `lastRunAt` and `lastStatus`.',
        response: { 200: ScheduleListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const schedules = await app.schedules.list(request.tenant);
      return {
        data: await Promise.all(schedules.map((schedule) => scheduleView(app, request.tenant, schedule))),
      };
    },
  );

  app.get(
    '/:name',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'getSchedule',
        summary: 'Read a schedule',
        description: '404 `ERR_SCHEDULE_NOT_FOUND`.',
        params: ScheduleParamsSchema,
        response: { 200: ScheduleSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) =>
      scheduleView(app, request.tenant, await scheduleOf(app, request.tenant, request.params.name)),
  );
};

export default readScheduleRoutes;
