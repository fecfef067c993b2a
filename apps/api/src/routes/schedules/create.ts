import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CreateScheduleBodySchema, ErrorResponseSchema, ScheduleSchema } from '@tether/protocol';
import { QueueError } from '@tether/store';
import type { ScheduleRecord } from '@tether/store/schedules';
import { COMMON_ERRORS } from '../schemas.js';
import { checkTiming, scheduledSpec, scheduleView } from './schedules.js';

/** `POST /v1/schedules`: add a schedule; its job scheduler starts now. */
const createScheduleRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      schema: {
        tags: ['schedules'],
        operationId: 'createSchedule',
        summary: 'Add a schedule',
        description:
          'A run (`run`, a `POST /v1/runs` body, checked as that route checks it) submitted at each tick of `cron` (in `timezone`, default UTC) or `every` (exactly one of them). 201 with the schedule. 400 `ERR_SCHEDULE_INVALID` naming the field; 409 `ERR_SCHEDULE_EXISTS` for a name taken, `ERR_SCHEDULE_LIMIT` past `TETHER_TENANT_MAX_SCHEDULES`.',
        body: CreateScheduleBodySchema,
        response: {
          201: ScheduleSchema,
          402: ErrorResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { name, cron, every, run, sessionId } = request.body;
      const timezone = request.body.timezone ?? 'UTC';
      const everyMs = checkTiming(app, { cron, every, timezone });
      const spec = await scheduledSpec(app, request.tenant, run, sessionId);
      const now = Date.now();
      const schedule: ScheduleRecord = {
        name,
        cron,
        every,
        timezone,
        overlap: request.body.overlap ?? 'skip',
        catchUp: request.body.catchUp ?? 'one',
        sessionId,
        paused: false,
        spec,
        createdAt: now,
        updatedAt: now,
      };
      const created = await app.schedules.create(request.tenant, schedule);
      if (created === 'exists') {
        throw new QueueError(
          'ERR_SCHEDULE_EXISTS',
          `There is a schedule ${name} already; choose another name.`,
        );
      }
      if (created === 'limit') {
        throw new QueueError(
          'ERR_SCHEDULE_LIMIT',
          `This tenant has ${app.schedules.maxSchedules} schedules already (TETHER_TENANT_MAX_SCHEDULES); delete one first.`,
        );
      }
      await app.schedules.arm(request.tenant, schedule, everyMs);
      reply.header('location', `/v1/schedules/${name}`);
      return reply.code(201).send(await scheduleView(app, request.tenant, schedule));
    },
  );
};

export default createScheduleRoute;
