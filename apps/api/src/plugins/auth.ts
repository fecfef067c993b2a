import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type ApiConfig, type ApiKey, DEFAULT_TENANT } from '../config.js';
import { ApiError } from '../errors.js';
import { createReadTokens, type ReadTokenIssuer } from '../read-token.js';
import { createSessionTokens, type SessionTokenIssuer, sessionTokenCovers } from '../session-token.js';

/**
 * How a route authenticates: `public` (health, metrics, docs), `key` (a bearer
 * key, the default), `key-or-token` (a bearer key, or a run-scoped read token
 * in `?token=` for the run in the URL, or a session token of that run's
 * session: the run's events), or `key-or-session-token` (a bearer key, or a
 * session token of the session in the URL or of the run's session: the
 * session's routes, reading a run, answering its questions). A session token
 * comes in `?token=` or as the bearer. `websocket` (the gateway's upgrade):
 * a bearer key, or a session token of any session (which limits the socket to
 * it); a failure is not answered 401 but left in `request.authRefused`, for
 * the handler to accept the socket and close it with 1008, as browsers only
 * see close codes. Failures count toward the limit all the same.
 */
export type RouteAuth = 'public' | 'key' | 'key-or-token' | 'key-or-session-token' | 'websocket';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /**
     * The route also takes a webhook's answer token (`wat_…`, as the bearer or `?token=`) in place
     * of any credentials: the route checks it (`request.answerToken`), the tenant stays ''. A
     * token that is not valid there is a failed authentication: the route hands its refusal to
     * `app.authFailed`. An address past the limit is refused before its token is looked at.
     */
    answerToken?: boolean;
  }
  interface FastifyRequest {
    /** The caller's tenant ('' on public routes when keys are configured). */
    tenant: string;
    /** The session a session token limits the caller to; undefined with an API key. */
    sessionScope: string | undefined;
    /** On a `websocket` route: why the caller was not authenticated (the handler closes the socket). */
    authRefused: 'unauthorized' | 'rate_limited' | undefined;
    /** On a route that takes one: the answer token presented instead of credentials (the route checks it). */
    answerToken: string | undefined;
  }
  interface FastifyInstance {
    readTokens: ReadTokenIssuer;
    sessionTokens: SessionTokenIssuer;
    /**
     * A failed authentication that a route found (an answer token that is not valid for the
     * question in the URL), counted toward the address's limit as the hook counts its own: returns
     * the error to throw, `refusal` (a 401, sent with `WWW-Authenticate: Bearer`), or 429
     * `ERR_AUTH_RATE_LIMITED` when this failure passes the limit.
     */
    authFailed(request: FastifyRequest, reply: FastifyReply, refusal: Error): Error;
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

/** Why a request was not authenticated: for the log only, never for the client. */
type Failure =
  | 'no credentials'
  | 'malformed Authorization header'
  | 'unknown API key'
  | 'bad read token'
  | 'bad session token'
  | 'bad answer token';

/**
 * Every request needs a bearer key, except on public routes, and on the events
 * route, which also takes a run's read token in `?token=`. A request that fails
 * is answered the same whatever went wrong (missing, malformed or unknown key,
 * bad token: 401 with one message per route kind); the reason is only logged.
 *
 * Failed authentications are counted per client address (`request.ip`) in the
 * shared counters: past `TETHER_AUTH_FAIL_LIMIT` in a
 * `TETHER_AUTH_FAIL_WINDOW_MS` window, every request of that address that
 * needs credentials is 429 `ERR_AUTH_RATE_LIMITED` with `Retry-After`, until
 * the window ends, whatever its credentials. A valid key is refused too:
 * otherwise the answer (200 or 429) would still tell a guesser which key is
 * right, and the limit would not slow guessing at all. Requests that
 * authenticate are not counted. A webhook's answer token is checked by its
 * route, with or without keys configured, and counted the same: a limited
 * address is refused before its token is looked at, and a token the route
 * refuses is a failure (`app.authFailed`).
 */
const authPlugin: FastifyPluginAsync<AuthPluginOptions> = async (app, { config }) => {
  const tokens = createReadTokens(config.tokenSecret, config.tokenTtlSeconds);
  const sessionTokens = createSessionTokens(config.tokenSecret, config.sessionTtlSeconds);
  app.decorate('readTokens', tokens);
  app.decorate('sessionTokens', sessionTokens);
  app.decorateRequest('tenant', '');
  app.decorateRequest('sessionScope', undefined);
  app.decorateRequest('authRefused', undefined);
  app.decorateRequest('answerToken', undefined);
  const failures = failureCounter(app, config);
  const verifiers: Verifiers = { apiKeys: config.apiKeys, tokens, sessionTokens };

  app.decorate('authFailed', (request: FastifyRequest, reply: FastifyReply, refusal: Error): Error => {
    const { limited, ttl } = failures.count(request, 'bad answer token');
    if (limited) return failures.limitedError(reply, ttl);
    reply.header('www-authenticate', 'Bearer');
    return refusal;
  });

  app.addHook('onRequest', authHook(config, failures, verifiers));
};

/** What credentials are checked against: the configured keys, and the token issuers. */
interface Verifiers {
  apiKeys: readonly ApiKey[];
  tokens: ReadTokenIssuer;
  sessionTokens: SessionTokenIssuer;
}

/** The caller's tenant, or why there is none. */
function authenticate(
  request: FastifyRequest,
  mode: RouteAuth,
  { apiKeys, tokens, sessionTokens }: Verifiers,
): { tenant: string; session?: string } | { failure: Failure } {
  const header = request.headers.authorization;
  const takesSessionToken =
    mode === 'key-or-token' || mode === 'key-or-session-token' || mode === 'websocket';
  const id = (request.params as { id?: unknown }).id;
  const bySessionToken = (token: string): { tenant: string; session: string } | { failure: Failure } => {
    const scope = sessionTokens.verify(token);
    // A socket's URL names no session: the token's own is the one it may use.
    return scope && (mode === 'websocket' || sessionTokenCovers(scope.sessionId, id))
      ? { tenant: scope.tenant, session: scope.sessionId }
      : { failure: 'bad session token' };
  };
  if (header !== undefined) {
    const match = BEARER.exec(header);
    if (!match) return { failure: 'malformed Authorization header' };
    const presented = match[1] as string;
    if (takesSessionToken && presented.startsWith('ses_')) return bySessionToken(presented);
    const tenant = tenantOfKey(apiKeys, presented);
    return tenant === undefined ? { failure: 'unknown API key' } : { tenant };
  }
  const token = (request.query as { token?: unknown }).token;
  if (takesSessionToken && typeof token === 'string' && token.startsWith('ses_'))
    return bySessionToken(token);
  if (mode === 'key-or-token' && typeof token === 'string') {
    const tenant = typeof id === 'string' ? tokens.verify(token, id) : undefined;
    return tenant === undefined ? { failure: 'bad read token' } : { tenant };
  }
  return { failure: 'no credentials' };
}

type FailureCounter = ReturnType<typeof failureCounter>;

/** Failed authentications, counted per client address in the shared counters. */
function failureCounter(app: FastifyInstance, config: Readonly<ApiConfig>) {
  const windowSeconds = config.authFailWindowMs / 1_000;
  const counterOf = (request: FastifyRequest) => `auth-failure:${request.ip}`;
  return {
    /** The failures of `request`'s address in the current window, without counting one. */
    peek: (request: FastifyRequest) => app.counters.peek(counterOf(request), config.authFailWindowMs),

    /** Counts a failure of `request`'s address; `limited` once past the limit (logged once per window). */
    count: (request: FastifyRequest, failure: Failure) => {
      const { current, ttl } = app.counters.increment(counterOf(request), config.authFailWindowMs);
      const limited = current > config.authFailLimit;
      // Past the limit, a flood of failures is not a flood of info lines.
      request.log[limited ? 'debug' : 'info'](
        { reason: failure, failures: current },
        'authentication failed',
      );
      if (current === config.authFailLimit + 1) {
        request.log.warn(
          { address: request.ip, limit: config.authFailLimit, windowMs: config.authFailWindowMs },
          'too many failed authentications from this address: its requests are 429 until the window ends',
        );
      }
      return { limited, ttl };
    },

    /** 429 `ERR_AUTH_RATE_LIMITED`, with `Retry-After` set on `reply`. */
    limitedError: (reply: FastifyReply, ttl: number): ApiError => {
      reply.header('retry-after', String(Math.max(1, Math.ceil(ttl / 1_000))));
      return new ApiError(
        'ERR_AUTH_RATE_LIMITED',
        `Too many failed authentications from this address: at most ${config.authFailLimit} per ${windowSeconds} s. Retry after the time in Retry-After, with valid credentials.`,
      );
    },
  };
}

/** The `onRequest` hook that authenticates every request (see {@link authPlugin}). */
function authHook(config: Readonly<ApiConfig>, failures: FailureCounter, verifiers: Verifiers) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    // Unmatched routes answer 404 to everyone: the route table is public (/openapi.json).
    if (request.routeOptions.url === undefined) return;
    const mode = request.routeOptions.config.auth ?? 'key';
    // An answer token is checked by its route (it is stored hashed with its question), with or
    // without keys; its failures count all the same (`app.authFailed`).
    const answerToken = request.routeOptions.config.answerToken ? answerTokenOf(request) : undefined;
    if (answerToken === undefined && config.apiKeys.length === 0) {
      request.tenant = DEFAULT_TENANT;
      return;
    }
    if (mode === 'public') return;
    // A limited address is refused before its credentials are looked at (see above).
    const seen = failures.peek(request);
    if (seen.current > config.authFailLimit) {
      if (mode === 'websocket') {
        request.authRefused = 'rate_limited';
        return;
      }
      throw failures.limitedError(reply, seen.ttl);
    }
    if (answerToken !== undefined) {
      request.answerToken = answerToken;
      return;
    }
    const result = authenticate(request, mode, verifiers);
    if ('tenant' in result) {
      request.tenant = result.tenant;
      request.sessionScope = result.session;
      return;
    }
    const { limited, ttl } = failures.count(request, result.failure);
    if (limited) {
      if (mode === 'websocket') {
        request.authRefused = 'rate_limited';
        return;
      }
      throw failures.limitedError(reply, ttl);
    }
    if (mode === 'websocket') {
      request.authRefused = 'unauthorized';
      return;
    }
    reply.header('www-authenticate', 'Bearer');
    throw new ApiError('ERR_UNAUTHORIZED', unauthorizedMessage(mode));
  };
}

/** The one 401 message of a route kind, whatever went wrong. */
function unauthorizedMessage(mode: RouteAuth): string {
  return mode === 'key-or-token'
    ? 'Authentication required: send "Authorization: Bearer <api key>" with a valid key, or ?token=<a valid read token of this run, or session token of its session>.'
    : mode === 'key-or-session-token'
      ? 'Authentication required: send "Authorization: Bearer <api key>" with a valid key, or a valid token of this session (as the bearer or ?token=).'
      : 'Authentication required: send "Authorization: Bearer <api key>" with a valid key.';
}

/** A webhook answer token presented as the bearer or in `?token=`, if any. */
function answerTokenOf(request: FastifyRequest): string | undefined {
  const bearer = BEARER.exec(request.headers.authorization ?? '')?.[1];
  if (bearer?.startsWith('wat_')) return bearer;
  const token = (request.query as { token?: unknown }).token;
  return typeof token === 'string' && token.startsWith('wat_') ? token : undefined;
}

export default fp(authPlugin, { name: 'tether-auth', fastify: '5.x', dependencies: ['tether-counters'] });
