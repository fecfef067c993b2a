import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

/**
 * The OpenAPI document, built from the routes' TypeBox schemas
 * (`GET /openapi.json`), and Swagger UI on it (`/docs`). Both are public.
 */
const swaggerPlugin: FastifyPluginAsync = async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tether API',
        version: '0.1.0',
        description:
          'Durable LLM agent runs: submit and poll, follow the SSE event stream with replay, answer clarify questions. Errors are always { error: { code, message } }.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An API key of TETHER_API_KEYS.' },
          readToken: {
            type: 'apiKey',
            in: 'query',
            name: 'token',
            description: 'The run-scoped read token of POST /v1/runs (events route only).',
          },
        },
      },
      security: [{ bearer: [] }],
      tags: [
        { name: 'runs', description: 'Submit, read, list and cancel runs' },
        { name: 'events', description: 'The event log of a run: SSE or JSON pages' },
        {
          name: 'sessions',
          description: 'Conversations: runs one after another, with the transcript as history',
        },
        {
          name: 'batches',
          description: 'Many runs submitted at once, all or none, read and cancelled together',
        },
        { name: 'clarify', description: 'Answers to the questions runs ask' },
        { name: 'approvals', description: "The tenant's default approval policy for its runs' tool calls" },
        { name: 'budgets', description: "The tenant's budgets per day and month, and its usage ledger" },
        {
          name: 'skills',
          description: "The tenant's skills (Agent Skills format), for runs with the skill toolset",
        },
        { name: 'files', description: 'What a run left in its workspace' },
        { name: 'memory', description: 'What runs saved for later runs, per scope' },
        { name: 'mcp', description: 'MCP servers a tenant registers for its runs' },
        { name: 'schedules', description: 'Runs submitted on a cron pattern or at an interval' },
        { name: 'tools', description: 'The tool catalog' },
        { name: 'models', description: 'The model profiles runs may name' },
        { name: 'health', description: 'Liveness and readiness' },
      ],
    },
  });

  app.get(
    '/openapi.json',
    { schema: { hide: true }, config: { auth: 'public', rateLimit: false } },
    async () => app.swagger(),
  );

  // Swagger UI's own routes are public: mark them as they are added.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, auth: 'public' };
    });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
};

export default fp(swaggerPlugin, { name: 'tether-swagger', fastify: '5.x' });
