import cors from '@fastify/cors';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

/** The methods the API's routes answer, for a preflight's `Access-Control-Allow-Methods`. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * The request headers a page may send: credentials, JSON bodies, a submission's key, the SSE
 * cursor, and the two the API takes to correlate a request (its id, the caller's trace).
 */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'Last-Event-ID',
  'X-Request-Id',
  'traceparent',
] as const;

/**
 * The response headers a page may read, beyond the CORS-safelisted ones: what the routes and the
 * limiters set (a created resource's `Location`, a replayed submission's `Idempotent-Replayed`,
 * `Retry-After` of 429 and 503, the rate limit's counters, the request id, a downloaded file's name,
 * and the scheme of a 401).
 */
export const CORS_EXPOSED_HEADERS = [
  'Location',
  'Retry-After',
  'Idempotent-Replayed',
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Content-Disposition',
  'WWW-Authenticate',
] as const;

/** How long a browser may keep a preflight's answer (s). */
export const CORS_MAX_AGE_S = 600;

export interface CorsPluginOptions {
  /** `TETHER_CORS_ORIGINS`: exact origins, `['*']` for any, empty for no CORS at all. */
  origins: readonly string[];
}

/**
 * CORS for browser pages on other origins (`@fastify/cors`), off unless `TETHER_CORS_ORIGINS`
 * names them. A request from a listed origin (any, with `*`) gets `Access-Control-Allow-Origin`
 * with its origin (`*`), and with a list, `Access-Control-Allow-Credentials`. A preflight
 * (`OPTIONS`) from one is answered 204 in this plugin's `onRequest` hook, before authentication
 * sees it (browsers send no `Authorization` on a preflight) and before the rate limiter counts it.
 * A request without `Origin`, or from an origin not listed, gets no CORS header at all: its
 * `OPTIONS` is answered as any other method a path lacks (405 with `Allow`, or 404).
 */
const corsPlugin: FastifyPluginAsync<CorsPluginOptions> = async (app, { origins }) => {
  if (origins.length === 0) return;
  const any = origins.includes('*');
  await app.register(cors, {
    // false: no CORS headers; true: the request's own origin; '*': any.
    origin: (origin, callback) => {
      if (origin === undefined) callback(null, false);
      else callback(null, any ? '*' : origins.includes(origin));
    },
    // `*` cannot go with credentials (browsers refuse the answer).
    credentials: !any,
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_S,
    // An OPTIONS from a listed origin is a preflight even without Access-Control-Request-Method
    // (else @fastify/cors answers it 400 in plain text, outside the API's error shape).
    strictPreflight: false,
  });
};

export default fp(corsPlugin, { name: 'tether-cors', fastify: '5.x' });
