import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ToolCatalogSchema } from '@tether/protocol';
import { toolCatalog } from '../../catalog.js';
import { COMMON_ERRORS } from '../schemas.js';

/** `GET /v1/tools`: the catalog, built once (it does not change while the process runs). */
const toolRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const catalog = toolCatalog();
  const body = JSON.stringify(catalog);
  app.get(
    '/',
    {
      schema: {
        tags: ['tools'],
        operationId: 'listTools',
        summary: 'The tool catalog: toolsets, defaults, and each tool with the JSON Schema of its arguments',
        response: { 200: ToolCatalogSchema, ...COMMON_ERRORS },
      },
      // Serialised once at start: the tool schemas are arbitrary JSON Schema.
      serializerCompiler: () => (data) => (data === catalog ? body : JSON.stringify(data)),
    },
    async () => catalog,
  );
};

export default toolRoutes;
