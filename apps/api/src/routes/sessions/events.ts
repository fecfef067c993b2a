import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, EventPageSchema, EXPECTED } from '@tether/protocol';
import { parseSessionCursor, readSessionEvents } from '@tether/store/sessions';
import { wantsJson } from '../runs/events/index.js';
import { openSse } from '../runs/events/open-sse.js';
import { COMMON_ERRORS } from '../schemas.js';
import { SessionParamsSchema } from './params.js';
import { SessionStream } from './session-stream.js';

/** A session cursor: `<runId>:<eventId>` (an event id of the session's stream), or 0 for the start. */
const SessionCursorSchema = Type.String({
  maxLength: 120,
  pattern: '^(0|run_[0-9a-z_]{26,60}:[0-9]{1,20}-[0-9]{1,20})$',
  [EXPECTED]: "a session event id (a run id, ':' and an event id, as the stream numbers them) or 0",
  description: 'A session event id (`<runId>:<eventId>`), or 0 for the start',
});

const EventsQuerySchema = Type.Object({
  after: Type.Optional(SessionCursorSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, default: 100 })),
  token: Type.Optional(Type.String({ maxLength: 300, description: 'The session token' })),
});

/** `GET /v1/sessions/:id/events`: every run of the session as one SSE stream (or a JSON page). */
const sessionEventsRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/events',
    {
      config: { auth: 'key-or-session-token' },
      exposeHeadRoute: false,
      schema: {
        tags: ['sessions', 'events'],
        operationId: 'streamSessionEvents',
        summary: 'Follow every run of the session (SSE)',
        description:
          "One SSE stream of every run of the session, in order: each event as `id:` (its session event id, `<runId>:<eventId>`), `event:` (its type) and `data:` (the event as JSON, `id` being the session event id). After `Last-Event-ID` (or `?after=`), or from the session's first event; it stays open between runs (`: ping` every 15 s) and ends when the session is deleted. Accepts the session token as `?token=`.",
        security: [{ bearer: [] }, { readToken: [] }],
        params: SessionParamsSchema,
        querystring: EventsQuerySchema,
        headers: Type.Object({ 'last-event-id': Type.Optional(SessionCursorSchema) }),
        response: { 200: EventPageSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
      serializerCompiler: () => (data) => JSON.stringify(data),
    },
    async (request, reply) => {
      const { id } = request.params;
      const tenant = request.tenant;
      await app.sessions.record(tenant, id);
      const cursor = request.headers['last-event-id'] ?? request.query.after;
      const after = cursor && cursor !== '0' ? parseSessionCursor(cursor) : undefined;
      if (wantsJson(request.headers.accept)) {
        const page = await readSessionEvents(app.store, id, after, request.query.limit ?? 100);
        return reply
          .type('application/json; charset=utf-8')
          .send({ data: page.events, nextCursor: page.next });
      }
      const res = openSse(app, reply, tenant, 'close one first');
      const stream = new SessionStream({
        app,
        sessionId: id,
        tenant,
        res,
        after,
        log: request.log,
        onEnd: (ended, why) => app.streams.remove(ended, why),
      });
      app.streams.add(stream);
      await stream.start();
    },
  );
};

export default sessionEventsRoute;
