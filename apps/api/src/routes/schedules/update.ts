import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, ScheduleSchema, UpdateScheduleBodySchema } from '@tether/protocol';
import type { ScheduleRecord } from '@tether/store/schedules';
import { COMMON_ERRORS } from '../schemas.js';
import { ScheduleParamsSchema } from './params.js';
import { checkTiming, notFound, scheduledSpec, scheduleOf, scheduleView } from './schedules.js';

/** `PATCH /v1/schedules/:name` (change a schedule) and `DELETE /v1/schedules/:name`. */
const updateScheduleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.patch(
    '/:name',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'updateSchedule',
        summary: 'Change a schedule',
        description:
          'Any of `cron` or `every` (one replaces the other), `timezone`, `overlap`, `catchUp` and `run` (checked as at creation). A new timing starts from now: the next tick is computed again. 200 with the schedule.',
        params: ScheduleParamsSchema,
        body: UpdateScheduleBodySchema,
        response: {
          200: ScheduleSchema,
          402: ErrorResponseSchema,
          404: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      const { tenant } = request;
      const before = await scheduleOf(app, tenant, request.params.name);
      const { cron, every, timezone, overlap, catchUp, run } = request.body;
      const timingChanged = cron !== undefined || every !== undefined || timezone !== undefined;
      const timing =
        cron !== undefined || every !== undefined
          ? { cron, every, timezone: timezone ?? before.timezone }
          : { cron: before.cron, every: before.every, timezone: timezone ?? before.timezone };
      const everyMs = checkTiming(app, timing);
      const schedule: ScheduleRecord = {
        ...before,
        ...timing,
        overlap: overlap ?? before.overlap,
        catchUp: catchUp ?? before.catchUp,
        spec: run ? await scheduledSpec(app, tenant, run, before.sessionId) : before.spec,
        updatedAt: Date.now(),
      };
      if (!(await app.schedules.replace(tenant, schedule))) throw notFound(schedule.name);
      if (timingChanged && !schedule.paused) await app.schedules.arm(tenant, schedule, everyMs);
      return scheduleView(app, tenant, schedule);
    },
  );

  app.delete(
    '/:name',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'deleteSchedule',
        summary: 'Delete a schedule',
        description:
          '204: no tick fires after it (a tick being fired as it is deleted finds no schedule and makes no run). Its runs stay, with their `scheduleId`. 404 `ERR_SCHEDULE_NOT_FOUND`.',
        params: ScheduleParamsSchema,
        response: { 204: Type.Null(), 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await scheduleOf(app, request.tenant, request.params.name);
      if (!(await app.schedules.delete(request.tenant, request.params.name)))
        throw notFound(request.params.name);
      return reply.code(204).send(null);
    },
  );
};

export default updateScheduleRoutes;
