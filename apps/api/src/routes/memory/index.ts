import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ClearMemoryResponseSchema,
  CreateMemoryBodySchema,
  ErrorResponseSchema,
  EXPECTED,
  MEMORY_LIMITS,
  MemoryEntrySchema,
  MemoryIdSchema,
  MemoryPageSchema,
  MemoryScopeSchema,
} from '@tether/protocol';
import { MemoryService, MemoryStore } from '@tether/store/memory';
import { guardContent } from '@tether/tools';
import { COMMON_ERRORS } from '../schemas.js';

const ScopeParamsSchema = Type.Object({ scope: MemoryScopeSchema });
const EntryParamsSchema = Type.Object({ scope: MemoryScopeSchema, id: MemoryIdSchema });

const ListQuerySchema = Type.Object({
  q: Type.Optional(
    Type.String({
      maxLength: MEMORY_LIMITS.queryMaxChars,
      description: 'Words to look for; best matches first',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MEMORY_LIMITS.pageMaxLimit, default: 20 })),
  cursor: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,6}$',
      [EXPECTED]: "the previous page's nextCursor (a number)",
      description: 'nextCursor of the previous page',
    }),
  ),
});

/**
 * `/v1/memory/:scope`: people read and fix what runs saved. A scope belongs to
 * the caller's tenant: the same name under another key is another scope, and
 * an entry id of another tenant's is not found.
 */
const memoryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const memory = new MemoryService({
    store: new MemoryStore({
      redis: app.redis,
      keys: app.keys,
      maxEntries: app.config.memoryMaxEntries,
      maxBytes: app.config.memoryMaxBytes,
    }),
    guard: guardContent,
  });

  app.get(
    '/:scope',
    {
      schema: {
        tags: ['memory'],
        operationId: 'listMemoryEntries',
        summary: "List a memory scope's entries",
        description:
          'Newest first, or best first for `q` (full-text relevance, then recency). `total` counts every entry of the scope. A scope that holds nothing answers an empty page.',
        params: ScopeParamsSchema,
        querystring: ListQuerySchema,
        response: { 200: MemoryPageSchema, ...COMMON_ERRORS },
      },
    },
    async (request) =>
      memory.list(request.tenant, request.params.scope, {
        query: request.query.q,
        limit: request.query.limit ?? 20,
        cursor: request.query.cursor,
      }),
  );

  app.post(
    '/:scope',
    {
      schema: {
        tags: ['memory'],
        operationId: 'createMemoryEntry',
        summary: 'Add a memory entry',
        description:
          "The content (1 to 2,000 characters, trimmed) and tags pass the content guard the agent's saves pass: 422 `ERR_MEMORY_REFUSED` with the reason. 409 `ERR_MEMORY_DUPLICATE` (naming the entry that holds the same content) or `ERR_MEMORY_FULL` (`TETHER_MEMORY_MAX_ENTRIES`, `TETHER_MEMORY_MAX_BYTES`; the message lists the oldest entries). 201 with the entry.",
        params: ScopeParamsSchema,
        body: CreateMemoryBodySchema,
        response: {
          201: MemoryEntrySchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          422: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const entry = await memory.add(request.tenant, request.params.scope, request.body);
      reply.header('location', `/v1/memory/${request.params.scope}/${entry.id}`);
      return reply.code(201).send(entry);
    },
  );

  app.delete(
    '/:scope/:id',
    {
      schema: {
        tags: ['memory'],
        operationId: 'deleteMemoryEntry',
        summary: 'Delete a memory entry',
        description: '204, or 404 `ERR_MEMORY_NOT_FOUND` when the scope holds no such entry.',
        params: EntryParamsSchema,
        response: { 204: Type.Null(), 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await memory.remove(request.tenant, request.params.scope, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/:scope',
    {
      schema: {
        tags: ['memory'],
        operationId: 'clearMemoryScope',
        summary: 'Delete every entry of a memory scope',
        description: '200 with how many entries were deleted (0 for a scope that held none).',
        params: ScopeParamsSchema,
        response: { 200: ClearMemoryResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => memory.clear(request.tenant, request.params.scope),
  );
};

export default memoryRoutes;
