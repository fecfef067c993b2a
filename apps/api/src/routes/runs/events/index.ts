import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ErrorResponseSchema,
  EventPageSchema,
  EXPECTED,
  TERMINAL_EVENT_TYPES,
  TERMINAL_STATUSES,
} from '@tether/protocol';
import { ApiError } from '../../../errors.js';
import { COMMON_ERRORS, RunParamsSchema } from '../../schemas.js';
import { CURSOR_PATTERN, cursorProblem, LOG_START } from './event-ids.js';
import { EventStream } from './event-stream.js';
import { openSse } from './open-sse.js';

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

const CursorSchema = Type.String({
  pattern: CURSOR_PATTERN,
  [EXPECTED]: 'an event id (event ids look like 1764498759120-0) or 0',
  description: 'An event id, or 0 for the start',
});

const EventsQuerySchema = Type.Object({
  after: Type.Optional(CursorSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, default: 100 })),
  token: Type.Optional(Type.String({ maxLength: 200, description: 'The read token of POST /v1/runs' })),
});

const EventsHeadersSchema = Type.Object({
  'last-event-id': Type.Optional(CursorSchema),
});

/**
 * A cursor the schema let through (its pattern cannot bound the numbers) must
 * also be an id Redis can hold: 400 naming the field, not a 500 from `XRANGE`.
 */
function checkCursor(field: string, cursor: string | undefined): void {
  const problem = cursor === undefined ? undefined : cursorProblem(cursor);
  if (problem) throw new ApiError('ERR_VALIDATION', `${field} ${problem}.`);
}

/** SSE unless the client asks for JSON only. */
export function wantsJson(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  return !types.includes('text/event-stream') && types.includes('application/json');
}

/** `GET /v1/runs/:id/events`: the run's event log, as a live SSE stream or as JSON pages. */
const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/events',
    {
      config: { auth: 'key-or-token' },
      // A HEAD request must not open a stream.
      exposeHeadRoute: false,
      schema: {
        tags: ['events'],
        operationId: 'streamRunEvents',
        summary: "Follow a run's events (SSE), or read a page of them (JSON)",
        description:
          'SSE (`text/event-stream`, the default): every event after `Last-Event-ID` (or `?after=`, or from the start), then live ones as they happen, each as `id:` (the event id), `event:` (its type) and `data:` (the whole event as JSON); a `: ping` comment every 15 s; the stream ends after the terminal event (`run.completed`, `run.failed`, `run.cancelled`). With `Accept: application/json`: a page of at most `limit` events after `?after=` and the cursor of the next page (null once the run has ended and nothing follows). Accepts `?token=` (the read token of `POST /v1/runs`) instead of a bearer key.',
        security: [{ bearer: [] }, { readToken: [] }],
        params: RunParamsSchema,
        querystring: EventsQuerySchema,
        headers: EventsHeadersSchema,
        response: { 200: EventPageSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
      // Events go out as the log holds them, byte for byte what the SSE `data:` lines carry,
      // rather than re-shaped by a serializer compiled from the 17-way event union.
      serializerCompiler: () => (data) => JSON.stringify(data),
    },
    async (request, reply) => {
      checkCursor('querystring.after', request.query.after);
      checkCursor('headers.last-event-id', request.headers['last-event-id']);
      const { id } = request.params;
      const tenant = request.tenant;
      const run = await app.runs.get(tenant, id);

      if (wantsJson(request.headers.accept)) {
        const after = request.query.after ?? request.headers['last-event-id'] ?? LOG_START;
        const data = await app.store.readEvents(id, after, request.query.limit ?? 100);
        const last = data.at(-1);
        const nextCursor = last
          ? TERMINAL.has(last.type)
            ? null
            : last.id
          : TERMINAL_STATUSES.includes(run.status)
            ? null
            : after;
        return reply.type('application/json; charset=utf-8').send({ data, nextCursor });
      }

      const res = openSse(app, reply, tenant, 'close one, or poll with Accept: application/json');
      const started = Date.now();
      const stream = new EventStream({
        runId: id,
        tenant,
        res,
        store: app.store,
        hub: app.hub,
        after: request.headers['last-event-id'] ?? request.query.after ?? LOG_START,
        maxBufferBytes: app.config.sseMaxBufferBytes,
        log: request.log,
        onEnd: (ended, why) => {
          app.streams.remove(ended, why);
          request.log.debug({ runId: id, why, ms: Date.now() - started }, 'event stream ended');
        },
      });
      app.streams.add(stream);
      await stream.start();
    },
  );
};

export default eventRoutes;
