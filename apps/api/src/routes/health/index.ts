import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema } from '@tether/protocol';
import { errorBody } from '../../errors.js';

const OkSchema = Type.Object({ status: Type.Literal('ok') });

/** How long `/readyz` waits for Redis to answer PING. */
const PING_TIMEOUT_MS = 1_000;

/**
 * `/healthz` (the process is up, whatever Redis does) and `/readyz` (it can
 * serve: the Redis breaker is closed, PING is answered, and it is not shutting down).
 */
const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  const options = (summary: string, codes: 'ok' | 'ready') => ({
    config: { auth: 'public' as const, rateLimit: false },
    schema: {
      tags: ['health'],
      summary,
      security: [],
      response: codes === 'ok' ? { 200: OkSchema } : { 200: OkSchema, 503: ErrorResponseSchema },
    },
  });

  app.get('/healthz', options('Liveness: always 200 while the process serves', 'ok'), async () => ({
    status: 'ok' as const,
  }));

  app.get(
    '/readyz',
    options('Readiness: 200 when Redis answers PING, else 503', 'ready'),
    async (_request, reply) => {
      if (closing) return reply.code(503).send(errorBody('ERR_NOT_READY', 'The server is shutting down.'));
      if (!app.breaker.available) {
        const reason = app.breaker.outage?.reason ?? 'not connected yet';
        return reply.code(503).send(errorBody('ERR_NOT_READY', `Redis is not reachable (${reason}).`));
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          app.redis.ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('PING timed out')), PING_TIMEOUT_MS);
          }),
        ]);
        return { status: 'ok' as const };
      } catch (error) {
        return reply
          .code(503)
          .send(errorBody('ERR_NOT_READY', `Redis is not reachable: ${(error as Error).message}.`));
      } finally {
        clearTimeout(timer);
      }
    },
  );
};

export default healthRoutes;
