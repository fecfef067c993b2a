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
import consoleRoutes from './routes/console/index.js';
import healthRoutes from './routes/health/index.js';
import mcpServerRoutes from './routes/mcp-servers/index.js';
import memoryRoutes from './routes/memory/index.js';
import modelRoutes from './routes/models/index.js';
import runRoutes from './routes/runs/index.js';
import sessionRoutes from './routes/sessions/index.js';
import skillRoutes from './routes/skills/index.js';
import toolRoutes from './routes/tools/index.js';
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
};

/**
 * Requests whose log lines go to debug level, and that get no span: probes,
 * scrapes and the documentation's static files, which would otherwise fill
 * the logs at `info`.
 */
export function isQuietRequest(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return (
    path === '/healthz' ||
    path === '/readyz' ||
    path === '/metrics' ||
    path === '/openapi.json' ||
    path === '/docs' ||
    path.startsWith('/docs/')
  );
}

/** Fastify's request log lines ("incoming request", "request completed"), at debug level for quiet requests. */
class TetherLogController extends LogController {
  override incomingRequest(...args: Parameters<LogController['incomingRequest']>): void {
    const [request] = args;
    if (isQuietRequest(request.url)) request.log.debug({ req: request }, 'incoming request');
    else super.incomingRequest(...args);
  }

  override requestCompleted(...args: Parameters<LogController['requestCompleted']>): void {
    const [error, request, reply] = args;
    if (!error && isQuietRequest(request.url)) {
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    } else super.requestCompleted(...args);
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
