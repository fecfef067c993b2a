import { ErrorResponseSchema } from '@tether/protocol';
import type { FastifyPluginAsync } from 'fastify';
import { errorBody, UNAVAILABLE_MESSAGE, UNAVAILABLE_RETRY_AFTER_S } from '../errors.js';

/**
 * Registers `routes` as routes that need Redis: while the breaker is open
 * (Redis is unreachable) each answers 503 `ERR_UNAVAILABLE` with `Retry-After`
 * at once, after authentication and before the rate limit and the handler, and
 * its OpenAPI responses list that 503. Use it in place of `app.register(routes)`.
 */
export function requiresRedis(routes: FastifyPluginAsync): FastifyPluginAsync {
  return async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.schema = {
        ...route.schema,
        response: { ...(route.schema?.response as object | undefined), 503: ErrorResponseSchema },
      };
    });
    scope.addHook('onRequest', async (_request, reply) => {
      if (scope.breaker.available) return;
      return reply
        .code(503)
        .header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S))
        .send(errorBody('ERR_UNAVAILABLE', UNAVAILABLE_MESSAGE));
    });
    await scope.register(routes);
  };
}
