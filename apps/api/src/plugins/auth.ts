import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type ApiConfig, type ApiKey, DEFAULT_TENANT } from '../config.js';
import { ApiError } from '../errors.js';
import { createReadTokens, type ReadTokenIssuer } from '../read-token.js';

/**
 * How a route authenticates: `public` (health, metrics, docs), `key` (a bearer
 * key, the default), or `key-or-token` (a bearer key, or a run-scoped read token
 * in `?token=` for the run in the URL: the events route).
 */
export type RouteAuth = 'public' | 'key' | 'key-or-token';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    /** The caller's tenant ('' on public routes when keys are configured). */
    tenant: string;
  }
  interface FastifyInstance {
    readTokens: ReadTokenIssuer;
  }
}

export interface AuthPluginOptions {
  config: Readonly<ApiConfig>;
}

/**
 * The tenant of a bearer key, comparing in constant time: the presented key is
 * hashed and compared with every configured hash, without stopping at a match.
 */
export function tenantOfKey(keys: readonly ApiKey[], presented: string): string | undefined {
  const hash = createHash('sha256').update(presented).digest();
  let tenant: string | undefined;
  for (const key of keys) {
    if (timingSafeEqual(hash, key.hash) && tenant === undefined) tenant = key.tenant;
  }
  return tenant;
}

const BEARER = /^Bearer[ \t]+([^ \t]+)[ \t]*$/i;

const authPlugin: FastifyPluginAsync<AuthPluginOptions> = async (app, { config }) => {
  const tokens = createReadTokens(config.tokenSecret, config.tokenTtlSeconds);
  app.decorate('readTokens', tokens);
  app.decorateRequest('tenant', '');

  const unauthorized = (message: string) => new ApiError('ERR_UNAUTHORIZED', message);

  const fromKey = (request: FastifyRequest, header: string): string => {
    const match = BEARER.exec(header);
    if (!match) throw unauthorized('The Authorization header must be "Bearer <api key>".');
    const tenant = tenantOfKey(config.apiKeys, match[1] as string);
    if (tenant === undefined) {
      request.log.info('request with an unknown API key');
      throw unauthorized('Unknown API key.');
    }
    return tenant;
  };

  app.addHook('onRequest', async (request, reply) => {
    // Unmatched routes answer 404 to everyone: the route table is public (/openapi.json).
    if (request.routeOptions.url === undefined) return;
    const mode = request.routeOptions.config.auth ?? 'key';
    if (config.apiKeys.length === 0) {
      request.tenant = DEFAULT_TENANT;
      return;
    }
    if (mode === 'public') return;
    const header = request.headers.authorization;
    if (header !== undefined) {
      request.tenant = fromKey(request, header);
      return;
    }
    const token = (request.query as { token?: unknown }).token;
    if (mode === 'key-or-token' && typeof token === 'string') {
      const runId = (request.params as { id?: unknown }).id;
      const tenant = typeof runId === 'string' ? tokens.verify(token, runId) : undefined;
      if (tenant === undefined) throw unauthorized('The read token is invalid, expired, or for another run.');
      request.tenant = tenant;
      return;
    }
    reply.header('www-authenticate', 'Bearer');
    throw unauthorized(
      mode === 'key-or-token'
        ? 'Authentication required: send "Authorization: Bearer <api key>", or ?token=<read token of this run>.'
        : 'Authentication required: send "Authorization: Bearer <api key>".',
    );
  });
};

export default fp(authPlugin, { name: 'tether-auth', fastify: '5.x' });
