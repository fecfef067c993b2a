import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, RescheduleRunBodySchema, RunSchema } from '@tether/protocol';
import { ApiError } from '../../errors.js';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';
import { toRun } from './run-view.js';
import { startTime } from './timing.js';

/** `PATCH /v1/runs/:id`: give a scheduled run a new start time. */
const rescheduleRunRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.patch(
    '/:id',
    {
      schema: {
        tags: ['runs'],
        operationId: 'rescheduleRun',
        summary: 'Give a scheduled run a new start time',
        description:
          'The body is `{ runAt }` (ISO 8601) or `{ delayMs }` (from now), one of them, at most a year ahead; one in the past starts the run now. 200 with the run (`run.scheduled` says the new time). 409 `ERR_RUN_NOT_SCHEDULED` once the run is not scheduled any more (its time came, it ended, or a cancel was asked for).',
        params: RunParamsSchema,
        body: RescheduleRunBodySchema,
        response: {
          200: RunSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      const runAtMs = startTime(request.body);
      if (runAtMs === undefined) {
        throw new ApiError('ERR_VALIDATION', 'body: give runAt (ISO 8601) or delayMs, the new start time.');
      }
      return toRun(await app.runs.reschedule(request.tenant, request.params.id, runAtMs));
    },
  );
};

export default rescheduleRunRoute;
