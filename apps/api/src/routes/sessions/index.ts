import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  CreateSessionBodySchema,
  CreateSessionResponseSchema,
  CreateSessionRunBodySchema,
  CreateSessionRunResponseSchema,
  ErrorResponseSchema,
  EventPageSchema,
  MessagePageSchema,
  SESSION_LIMITS,
  SessionIdSchema,
  SessionListSchema,
  SessionSchema,
} from '@tether/protocol';
import { parseSessionCursor, readSessionEvents } from '@tether/queue';
import { ApiError } from '../../errors.js';
import { sealMcpServers } from '../../mcp-servers.js';
import { checkSessionTokenBody } from '../../session-token.js';
import { wantsJson } from '../runs/events/index.js';
import { openSse } from '../runs/events/open-sse.js';
import { runLinks } from '../runs/run-view.js';
import { checkSubmission } from '../runs/submission.js';
import { COMMON_ERRORS } from '../schemas.js';
import { SessionStream } from './session-stream.js';

const SessionParamsSchema = Type.Object({ id: SessionIdSchema });

const ListQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(SessionIdSchema),
});

const MessagesQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, default: 100 })),
  cursor: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,9}$', description: 'nextCursor of the previous page' }),
  ),
  token: Type.Optional(Type.String({ maxLength: 300, description: 'The session token' })),
});

/** A session cursor: `<runId>:<eventId>` (an event id of the session's stream), or 0 for the start. */
const SessionCursorSchema = Type.String({
  maxLength: 120,
  pattern: '^(0|run_[0-9a-z_]{26,60}:[0-9]{1,20}-[0-9]{1,20})$',
  description: 'A session event id (`<runId>:<eventId>`), or 0 for the start',
});

const EventsQuerySchema = Type.Object({
  after: Type.Optional(SessionCursorSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, default: 100 })),
  token: Type.Optional(Type.String({ maxLength: 300, description: 'The session token' })),
});

const TokenQuerySchema = Type.Object({
  token: Type.Optional(Type.String({ maxLength: 300, description: 'The session token' })),
});

const IdempotencyHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' }),
  ),
});

/** `/v1/sessions`: conversations, whose runs follow one another with the transcript as their history. */
const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      // The body is optional: none is an empty one.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['sessions'],
        operationId: 'createSession',
        summary: 'Create a session',
        description:
          "Answers 201 with the session and a session-scoped `token` for browsers: it reads the session, its messages and events and its runs, sends messages and answers their questions (as the bearer, or `?token=`), for the session's retention. The body is optional: `metadata`, `files` (written into the session's workspace before its first run) and `defaults` (model, toolsets, locale, clarify, limits, memory, tools and toolTimeoutMs of its runs).",
        body: CreateSessionBodySchema,
        response: {
          201: CreateSessionResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.metadata && JSON.stringify(body.metadata).length > SESSION_LIMITS.metadataMaxChars) {
        throw new ApiError(
          'ERR_VALIDATION',
          `body.metadata is ${JSON.stringify(body.metadata).length} characters as JSON; at most ${SESSION_LIMITS.metadataMaxChars}.`,
        );
      }
      // The defaults and files are checked as a run's would be, so a bad default fails now, not at every message.
      checkSubmission({ ...body.defaults, files: body.files }, app.config, { modelRequired: false });
      const session = await app.sessions.create(request.tenant, body);
      reply.header('location', `/v1/sessions/${session.id}`);
      return reply.code(201).send({ ...session, token: app.sessionTokens.issue(session.id, request.tenant) });
    },
  );

  app.get(
    '/',
    {
      schema: {
        tags: ['sessions'],
        operationId: 'listSessions',
        summary: "List the caller's sessions, newest first",
        querystring: ListQuerySchema,
        response: { 200: SessionListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) =>
      app.sessions.list(request.tenant, { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  );

  app.get(
    '/:id',
    {
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['sessions'],
        operationId: 'getSession',
        summary: 'Read a session',
        description:
          '`status` is `idle` (no live run), `busy` (a run queued or running) or `waiting_for_input` (its run waits on `pendingClarify`).',
        params: SessionParamsSchema,
        querystring: TokenQuerySchema,
        response: { 200: SessionSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => app.sessions.get(request.tenant, request.params.id),
  );

  app.delete(
    '/:id',
    {
      schema: {
        tags: ['sessions'],
        operationId: 'deleteSession',
        summary: 'Delete a session',
        description:
          "Removes the session, its transcript, its runs' records and events, and its workspace: 204. 409 `ERR_SESSION_BUSY` while a run is live, unless `?cancel=true`, which cancels the live runs first.",
        params: SessionParamsSchema,
        querystring: Type.Object({ cancel: Type.Optional(Type.Boolean()) }),
        response: {
          204: Type.Null(),
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      await app.sessions.delete(request.tenant, id, { cancel: request.query.cancel === true });
      await rm(join(app.config.workspaceRoot, 'sessions', id), { recursive: true, force: true });
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/:id/runs',
    {
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['sessions'],
        operationId: 'sendSessionMessage',
        summary: 'Send a message: a run of the session',
        description:
          "The body is a run's (its fields override the session's defaults) plus `multitask`, for when a run of the session is live: `enqueue` (the default) starts this run when that one ends; `reject` answers 409 `ERR_SESSION_BUSY`; `interrupt` cancels it at its next safe point (between tool calls, or while it waits on a question), then this run starts. The run sees the session's transcript as its history. 202 with the run, which carries `sessionId`. With a session token, `toolsets`, `memory`, `limits` and `mcpServers` are refused (403 `ERR_SESSION_TOKEN_FIELD`): they come from the session's defaults.",
        params: SessionParamsSchema,
        querystring: TokenQuerySchema,
        headers: IdempotencyHeadersSchema,
        body: CreateSessionRunBodySchema,
        response: {
          202: CreateSessionRunResponseSchema,
          403: ErrorResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const session = await app.sessions.record(request.tenant, id);
      const { multitask: _multitask, ...own } = request.body;
      if (request.sessionScope !== undefined) checkSessionTokenBody(own);
      checkSubmission({ ...session.defaults, ...own }, app.config);
      const body = await sealMcpServers(request.body, request.tenant, {
        config: app.config,
        registered: app.mcpServers,
      });
      const { run, created } = await app.sessions.submit(request.tenant, id, body, {
        idempotencyKey: request.headers['idempotency-key'],
        hashOf: request.body,
        requestId: request.id,
      });
      app.metrics.runsSubmitted.inc({ created: String(created) });
      if (!created) reply.header('idempotent-replayed', 'true');
      reply.header('location', runLinks(run.id).self);
      return reply.code(202).send({
        id: run.id,
        status: 'queued',
        sessionId: id,
        links: runLinks(run.id),
        token: app.readTokens.issue(run.id, request.tenant),
      });
    },
  );

  app.get(
    '/:id/messages',
    {
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['sessions'],
        operationId: 'listSessionMessages',
        summary: "Read the session's transcript",
        description:
          "The transcript in order: each run's input (`user`), the assistant's turns (with `toolCalls`) and the tool results (`tool`, with `toolCallId`), `limit` at a time; pass `nextCursor` as `?cursor=` for the next page. A run's turn enters the transcript when the run ends.",
        params: SessionParamsSchema,
        querystring: MessagesQuerySchema,
        response: { 200: MessagePageSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) =>
      app.sessions.messages(request.tenant, request.params.id, {
        limit: request.query.limit ?? 100,
        cursor: request.query.cursor,
      }),
  );

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

export default sessionRoutes;
