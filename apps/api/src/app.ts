/**
 * The API as a Fastify plugin (`buildApp`), and the Fastify instance it runs
 * in (`createApp`): the server entry point and the tests build it the same way.
 *
 * Order matters: validation and errors first (they configure the root),
 * then Redis and the queue, metrics (its `onResponse` hook sees every route),
 * streams, WebSockets, the OpenAPI collector (it must see routes as they are added), the
 * shared request counters, auth (a global `onRequest` hook, counting failures
 * per address), the rate limiter (route-level hooks, which run after the
 * global ones: the tenant is known), and the routes (the web console's static
 * files among them). The run routes need
 * Redis: while it is unreachable they answer 503 at once (`requiresRedis`).
 */
import type { IncomingMessage } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { RunEndMetrics } from '@tether/telemetry';
import type { Telemetry } from 'bullmq';
import Fastify, {
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import fp from 'fastify-plugin';
import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import type { ApiConfig } from './config.js';
import authPlugin from './plugins/auth.js';
import corsPlugin from './plugins/cors.js';
import countersPlugin from './plugins/counters.js';
import errorsPlugin from './plugins/errors.js';
import methodNotAllowedPlugin from './plugins/method-not-allowed.js';
import metricsPlugin from './plugins/metrics.js';
import queuePlugin from './plugins/queue.js';
import rateLimitPlugin from './plugins/rate-limit.js';
import redisPlugin from './plugins/redis.js';
import { requiresRedis } from './plugins/requires-redis.js';
import socketsPlugin from './plugins/sockets.js';
import streamsPlugin from './plugins/streams.js';
import swaggerPlugin from './plugins/swagger.js';
import tracingPlugin from './plugins/tracing.js';
import validationPlugin from './plugins/validation.js';
import { requestIdOf } from './request-id.js';
import approvalPolicyRoutes from './routes/approval-policy/index.js';
import batchRoutes from './routes/batches/index.js';
import budgetRoutes from './routes/budgets/index.js';
import consoleRoutes from './routes/console/index.js';
import healthRoutes from './routes/health/index.js';
import mcpServerRoutes from './routes/mcp-servers/index.js';
import memoryRoutes from './routes/memory/index.js';
import modelRoutes from './routes/models/index.js';
import runRoutes from './routes/runs/index.js';
import scheduleRoutes from './routes/schedules/index.js';
import sessionRoutes from './routes/sessions/index.js';
import skillRoutes from './routes/skills/index.js';
import toolRoutes from './routes/tools/index.js';
import usageRoutes from './routes/usage/index.js';
import webhookRoutes from './routes/webhooks/index.js';
import wsRoutes from './routes/ws/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Readonly<ApiConfig>;
  }
}

export interface AppOptions {
  config: Readonly<ApiConfig>;
  /** Traces (BullMQ's telemetry interface over the OpenTelemetry SDK), when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
  telemetry?: Telemetry | undefined;
}

/** `/v1/runs/` is `/v1/runs`, for the router and for the 405 plugin's table alike. */
const IGNORE_TRAILING_SLASH = true;

/** The whole API: plugins, then routes. Register it with `fastify-plugin` (as `createApp` does). */
export const buildApp: FastifyPluginAsync<AppOptions> = async (app, { config, telemetry }) => {
  app.decorate('config', config);
  // First: the request's span is opened before any other hook runs, and is active in every handler.
  if (telemetry) await app.register(tracingPlugin, { telemetry, quiet: isQuietRequest });
  await app.register(validationPlugin);
  await app.register(errorsPlugin);
  // CORS before anything that refuses a request, 405's route table before any route.
  await app.register(corsPlugin, { origins: config.corsOrigins });
  await app.register(methodNotAllowedPlugin, { ignoreTrailingSlash: IGNORE_TRAILING_SLASH });
  await app.register(redisPlugin, { config });
  const registry = new Registry();
  const runEnd = new RunEndMetrics(registry, { tenantLabel: config.metricsTenantLabel });
  await app.register(queuePlugin, { config, telemetry, onEnded: runEnd.ended });
  await app.register(metricsPlugin, { config, registry });
  await app.register(streamsPlugin, { config });
  await app.register(socketsPlugin, { config });
  await app.register(swaggerPlugin);
  await app.register(countersPlugin, { config });
  await app.register(authPlugin, { config });
  await app.register(rateLimitPlugin, { config });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  await app.register(healthRoutes);
  await app.register(consoleRoutes, { dir: config.consoleDir });
  await app.register(requiresRedis(runRoutes), { prefix: '/v1/runs' });
  await app.register(requiresRedis(sessionRoutes), { prefix: '/v1/sessions' });
  await app.register(requiresRedis(skillRoutes), { prefix: '/v1/skills' });
  await app.register(toolRoutes, { prefix: '/v1/tools' });
  await app.register(modelRoutes, { prefix: '/v1/models' });
  await app.register(requiresRedis(wsRoutes), { prefix: '/v1/ws' });
  await app.register(requiresRedis(memoryRoutes), { prefix: '/v1/memory' });
  await app.register(requiresRedis(mcpServerRoutes), { prefix: '/v1/mcp-servers' });
  await app.register(requiresRedis(webhookRoutes), { prefix: '/v1/webhooks' });
  await app.register(requiresRedis(approvalPolicyRoutes), { prefix: '/v1/approval-policy' });
  await app.register(requiresRedis(budgetRoutes), { prefix: '/v1/budgets' });
  await app.register(requiresRedis(usageRoutes), { prefix: '/v1/usage' });
  await app.register(requiresRedis(batchRoutes), { prefix: '/v1/batches' });
  await app.register(requiresRedis(scheduleRoutes), { prefix: '/v1/schedules' });
};

/**
 * Requests that get no span, and whose log line goes to debug level when it
 * succeeds: probes, scrapes and static files (the documentation's and the web
 * console's), which would otherwise fill the logs at `info`.
 */
export function isQuietRequest(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return (
    path === '/healthz' ||
    path === '/readyz' ||
    path === '/metrics' ||
    path === '/openapi.json' ||
    path === '/docs' ||
    path.startsWith('/docs/') ||
    path === '/console' ||
    path.startsWith('/console/')
  );
}

/** Lists of runs and sessions, and one run or session: `/v1/runs`, `/v1/runs/:id`, `/v1/sessions`… */
const POLLED = /^\/v1\/(runs|sessions)(\/[^/]+)?\/?$/;

/**
 * A read clients repeat to follow runs and sessions: the web console reads its
 * lists every 2 s, the CLI and the SDK read a run they wait for. That is a GET
 * (or HEAD) of a list of runs or sessions, or of one run or session, answered
 * 2xx or 304: it changes nothing, and a line per poll would bury the requests
 * that do. A read that failed is not one, nor are a run's event stream and its
 * other reads below it (files, event pages, a session's messages), which a
 * client makes once when it opens them. It keeps its span: it reads Redis, and
 * its time matters.
 */
export function isPollingRead(method: string, url: string, statusCode: number): boolean {
  return (
    (method === 'GET' || method === 'HEAD') &&
    ((statusCode >= 200 && statusCode < 300) || statusCode === 304) &&
    POLLED.test(url.split('?')[0] ?? '')
  );
}

/**
 * Whether a request's line goes to debug level: a successful GET (or HEAD) of
 * a quiet URL, or a polling read. Everything else stays at `info`: writes,
 * every 4xx and 5xx (a failing probe's included), streams and other reads.
 */
export function isQuietLine(method: string, url: string, statusCode: number): boolean {
  if ((method !== 'GET' && method !== 'HEAD') || statusCode >= 400) return false;
  return isQuietRequest(url) || isPollingRead(method, url, statusCode);
}

/**
 * One log line per request, when it ends: "request completed" with the request
 * (method, URL, address), the status and the time taken (ms), at debug level for
 * quiet lines ({@link isQuietLine}), else at `info`; "request errored" at
 * `error` when the response failed. The "incoming request" line is at `trace`
 * only, for finding a request that never ends; a WebSocket upgrade, which
 * never ends as a response, gets its one line when it comes ("websocket upgrade").
 */
class TetherLogController extends LogController {
  override incomingRequest(...args: Parameters<LogController['incomingRequest']>): void {
    const [request] = args;
    if (this.isLogDisabled(request)) return;
    // A WebSocket's upgrade never completes as a response does: its line is this one.
    if (request.headers.upgrade?.toLowerCase() === 'websocket') {
      request.log.info({ req: request }, 'websocket upgrade');
    } else request.log.trace({ req: request }, 'incoming request');
  }

  override requestCompleted(...args: Parameters<LogController['requestCompleted']>): void {
    const [error, request, reply] = args;
    if (this.isLogDisabled(request)) return;
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) {
      reply.log.error({ ...line, err: error }, 'request errored');
      return;
    }
    if (isQuietLine(request.method, request.url, reply.statusCode)) {
      reply.log.debug(line, 'request completed');
    } else reply.log.info(line, 'request completed');
  }
}

/** `?token=` never reaches a log line. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&]*/g, '$1[redacted]');
}

/** The process logger: pino, with the Authorization header and read tokens redacted. */
export function createLogger(config: Pick<ApiConfig, 'logLevel'>): Logger {
  return pino({
    name: 'tether-api',
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    serializers: {
      req: (request: { method?: string; url?: string; ip?: string; raw?: IncomingMessage }) => ({
        method: request.method,
        url: redactUrl(request.url ?? ''),
        remoteAddress: request.ip,
      }),
    },
  });
}

/** Fastify's options: limits, timeouts, request ids and prototype-poisoning protection from the configuration. */
export function serverOptions(config: Readonly<ApiConfig>, logger: Logger): FastifyServerOptions {
  return {
    loggerInstance: logger,
    logController: new TetherLogController(),
    bodyLimit: config.bodyLimit,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestTimeout: config.requestTimeoutMs,
    return503OnClosing: true,
    trustProxy: config.trustProxy,
    // The client's X-Request-Id when it is sane (see requestIdOf), else a random UUID.
    requestIdHeader: false,
    genReqId: requestIdOf,
    routerOptions: { ignoreTrailingSlash: IGNORE_TRAILING_SLASH },
  };
}

/** A ready-to-listen Fastify instance running the API. */
export function createApp(
  config: Readonly<ApiConfig>,
  logger: Logger = createLogger(config),
  options: { telemetry?: Telemetry | undefined } = {},
): FastifyInstance {
  const app = Fastify(serverOptions(config, logger)).withTypeProvider<TypeBoxTypeProvider>();
  void app.register(fp(buildApp), { config, telemetry: options.telemetry });
  return app;
}
