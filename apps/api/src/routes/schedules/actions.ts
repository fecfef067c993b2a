import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, ScheduleSchema, ScheduleTriggerResponseSchema } from '@tether/protocol';
import type { ScheduleRecord } from '@tether/store/schedules';
import { COMMON_ERRORS } from '../schemas.js';
import { ScheduleParamsSchema } from './params.js';
import { checkTiming, notFound, scheduleOf, scheduleView } from './schedules.js';

/** `POST /v1/schedules/:name/pause`, `/resume` and `/trigger`. */
const scheduleActionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  /** Pauses or resumes: the record first (a tick fired meanwhile reads it), then the job scheduler. */
  const setPaused = async (tenant: string, name: string, paused: boolean) => {
    const before = await scheduleOf(app, tenant, name);
    const schedule: ScheduleRecord = { ...before, paused, updatedAt: Date.now() };
    if (before.paused !== paused) {
      if (!(await app.schedules.replace(tenant, schedule))) throw notFound(name);
      if (paused) await app.schedules.disarm(tenant, name);
      else await app.schedules.arm(tenant, schedule, checkTiming(app, schedule));
    }
    return scheduleView(app, tenant, before.paused === paused ? before : schedule);
  };

  app.post(
    '/:name/pause',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'pauseSchedule',
        summary: 'Pause a schedule',
        description:
          'No tick fires until it is resumed (its job scheduler is removed; `nextRunAt` is null). A paused schedule may still be triggered. 200 with the schedule, paused already or not.',
        params: ScheduleParamsSchema,
        response: { 200: ScheduleSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => setPaused(request.tenant, request.params.name, true),
  );

  app.post(
    '/:name/resume',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'resumeSchedule',
        summary: 'Resume a paused schedule',
        description:
          'Ticks fire again from the next one after now: those that came while it was paused are not fired. 200 with the schedule.',
        params: ScheduleParamsSchema,
        response: { 200: ScheduleSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => setPaused(request.tenant, request.params.name, false),
  );

  app.post(
    '/:name/trigger',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'triggerSchedule',
        summary: 'Fire a schedule now',
        description:
          "Queues a firing outside the ticks, which a worker makes as it makes a tick's (the `overlap` policy applies): 202 with the id the run will have (`GET /v1/runs/:id` finds it once a worker has made it).",
        params: ScheduleParamsSchema,
        response: { 202: ScheduleTriggerResponseSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const schedule = await scheduleOf(app, request.tenant, request.params.name);
      const runId = await app.schedules.trigger(request.tenant, schedule);
      return reply.code(202).send({ runId });
    },
  );
};

export default scheduleActionRoutes;
