import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  CreateMcpServerBodySchema,
  ErrorResponseSchema,
  McpServerListSchema,
  McpServerNameSchema,
  McpServerSchema,
} from '@tether/protocol';
import { mcpServerView } from '@tether/store/mcp-servers';
import { ApiError } from '../../errors.js';
import { checkServerUrl, headersProblem, sealHeaders } from '../../mcp-servers.js';
import { COMMON_ERRORS } from '../schemas.js';

const McpServerParamsSchema = Type.Object({ name: McpServerNameSchema });

/**
 * `/v1/mcp-servers`: the remote MCP servers a tenant registers once, for its
 * runs to name in `mcpServers` by name alone. Their headers are sealed
 * before they are stored and never shown again (only their names are).
 */
const mcpServerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const notFound = (name: string) =>
    new ApiError('ERR_MCP_SERVER_NOT_FOUND', `The tenant has registered no MCP server named ${name}.`);

  app.get(
    '/',
    {
      schema: {
        tags: ['mcp'],
        operationId: 'listMcpServers',
        summary: "List the caller's MCP servers",
        description:
          "The servers the tenant registered, by name (their headers' names, never their values), how many it may register, and the names of the operator's stdio servers, which a run may name too.",
        response: { 200: McpServerListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => ({
      data: (await app.mcpServers.list(request.tenant)).map(mcpServerView),
      maxCount: app.mcpServers.maxServers,
      operatorServers: Object.keys(app.config.mcpServers).sort(),
    }),
  );

  app.get(
    '/:name',
    {
      schema: {
        tags: ['mcp'],
        operationId: 'getMcpServer',
        summary: 'Read an MCP server',
        params: McpServerParamsSchema,
        response: { 200: McpServerSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const server = await app.mcpServers.get(request.tenant, request.params.name);
      if (!server) throw notFound(request.params.name);
      return mcpServerView(server);
    },
  );

  app.post(
    '/',
    {
      schema: {
        tags: ['mcp'],
        operationId: 'registerMcpServer',
        summary: 'Register an MCP server, or replace one',
        description:
          "A remote server (Streamable HTTP, or legacy SSE) the tenant's runs may name by `name` alone in `mcpServers`. The URL follows the rules against SSRF (`ERR_URL_REFUSED`); `headers` (an `Authorization` token, say) are sealed with `TETHER_SECRETS_KEY` and never shown again. A server of the same name is replaced (its headers too). 201 when created, 200 when replaced; 409 `ERR_MCP_SERVERS_LIMIT` past `TETHER_MCP_MAX_SERVERS`, 409 `ERR_MCP_SERVER_NAME_TAKEN` for an operator's server's name.",
        body: CreateMcpServerBodySchema,
        response: {
          200: McpServerSchema,
          201: McpServerSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          503: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { name, url, headers, allowedTools } = request.body;
      if (Object.hasOwn(app.config.mcpServers, name)) {
        throw new ApiError(
          'ERR_MCP_SERVER_NAME_TAKEN',
          `${name} is the name of one of the operator's stdio MCP servers, which runs name the same way; register this one under another name.`,
        );
      }
      const checkedUrl = checkServerUrl(url, 'url', app.config);
      const names = Object.keys(headers ?? {});
      if (headers) {
        const problem = headersProblem(headers, 'headers');
        if (problem) throw new ApiError('ERR_MCP_SERVERS_INVALID', problem);
      }
      const result = await app.mcpServers.save(request.tenant, {
        name,
        url: checkedUrl,
        ...(headers && names.length > 0 ? { sealedHeaders: sealHeaders(headers, app.config.secrets) } : {}),
        headerNames: names,
        ...(allowedTools ? { allowedTools } : {}),
      });
      if ('full' in result) {
        throw new ApiError(
          'ERR_MCP_SERVERS_LIMIT',
          `The tenant has ${result.full} MCP servers, the most it may have (TETHER_MCP_MAX_SERVERS ${app.mcpServers.maxServers}); delete one first.`,
        );
      }
      reply.header('location', `/v1/mcp-servers/${name}`);
      return reply.code(result.created ? 201 : 200).send(mcpServerView(result.server));
    },
  );

  app.delete(
    '/:name',
    {
      schema: {
        tags: ['mcp'],
        operationId: 'deleteMcpServer',
        summary: 'Delete an MCP server',
        description:
          'Runs started before keep the server for their current attempt; later ones cannot name it.',
        params: McpServerParamsSchema,
        response: { 204: Type.Null(), 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      if (!(await app.mcpServers.delete(request.tenant, request.params.name))) {
        throw notFound(request.params.name);
      }
      return reply.code(204).send(null);
    },
  );
};

export default mcpServerRoutes;
