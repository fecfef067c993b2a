import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { RunIdSchema, RunListSchema, RunStatusSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { metadataFilter } from './metadata-filter.js';
import { toRun } from './run-view.js';

const ListQuerySchema = Type.Object({
  status: Type.Optional(RunStatusSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(RunIdSchema),
});

/** `GET /v1/runs`: the caller's runs, newest first, filtered by status and metadata. */
const listRunsRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['runs'],
        operationId: 'listRuns',
        summary: "List the caller's runs, newest first",
        description:
          "Filters: `status`, and `metadata.<key>=<value>` (string equality on the run's metadata, up to 8 pairs, ANDed; keys are plain names of 1 to 128 of `A-Z a-z 0-9 _ . -`, not `__proto__`, others are refused with 400; values of at most 256 characters). A filtered page reads at most 1,000 index entries: it may hold fewer than `limit` runs, even none, with a `nextCursor` to go on.",
        querystring: ListQuerySchema,
        response: { 200: RunListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const { runs, nextCursor } = await app.runs.list(request.tenant, {
        status: request.query.status,
        limit: request.query.limit ?? 20,
        cursor: request.query.cursor,
        metadata: metadataFilter(request.query as Record<string, unknown>),
      });
      return { data: runs.map(toRun), nextCursor };
    },
  );
};

export default listRunsRoute;
