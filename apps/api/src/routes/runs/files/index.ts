import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, RunFileListSchema, RunIdSchema } from '@tether/protocol';
import type { RunRecord } from '@tether/store/runs';
import { workspaceDir } from '@tether/tools';
import { listRunFiles, openRunFile } from '../../../workspace-files.js';
import { COMMON_ERRORS, RunParamsSchema } from '../../schemas.js';

/** A `Content-Disposition` file name: ASCII fallback plus the RFC 5987 UTF-8 form. */
function disposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** The download route's parameters as /openapi.json names them. */
const FilePathParamsSchema = Type.Object({
  id: RunIdSchema,
  path: Type.String({
    description:
      'The file, relative to the workspace; its slashes as they are (`dir/a.txt`) or encoded (`dir%2Fa.txt`).',
  }),
});

/**
 * `GET /v1/runs/:id/files` and `GET /v1/runs/:id/files/*`: what a run left in
 * its workspace. The API must see the workers' workspace root (shared storage).
 */
const fileRoutes: FastifyPluginAsyncTypebox = async (app) => {
  /** A run's workspace; a crew child works in its tree's (its root run's, or the root's session's). */
  const workspaceOf = async (tenant: string, run: RunRecord): Promise<string> => {
    const owner = run.rootRunId && run.rootRunId !== run.id ? await app.runs.get(tenant, run.rootRunId) : run;
    return workspaceDir(app.config.workspaceRoot, owner);
  };

  app.get(
    '/:id/files',
    {
      schema: {
        tags: ['files'],
        operationId: 'listRunFiles',
        summary: "List the files of a run's workspace",
        params: RunParamsSchema,
        response: { 200: RunFileListSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const run = await app.runs.get(request.tenant, request.params.id);
      return listRunFiles(await workspaceOf(request.tenant, run));
    },
  );

  app.get(
    '/:id/files/*',
    {
      // The document names the wildcard `{path}` (a `{*}` breaks client generators); a generated
      // client that sends it as one encoded segment (`dir%2Fa.txt`) reaches the same file.
      config: {
        swaggerTransform: ({ schema, url }) => ({
          url: url.replace(/\*$/, ':path'),
          schema: { ...schema, params: FilePathParamsSchema },
        }),
      },
      schema: {
        tags: ['files'],
        operationId: 'getRunFile',
        summary: "Download a file of a run's workspace",
        description:
          'The bytes of the file (`application/octet-stream`). The path is relative to the workspace.',
        params: Type.Object({ id: RunIdSchema, '*': Type.String() }),
        response: {
          200: Type.Unsafe<NodeJS.ReadableStream>({
            type: 'string',
            format: 'binary',
            description: 'The file',
          }),
          404: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const run = await app.runs.get(request.tenant, request.params.id);
      const file = await openRunFile(await workspaceOf(request.tenant, run), request.params['*']);
      return reply
        .type('application/octet-stream')
        .header('content-length', file.size)
        .header('content-disposition', disposition(file.name))
        .header('x-content-type-options', 'nosniff')
        .send(file.handle.createReadStream());
    },
  );
};

export default fileRoutes;
