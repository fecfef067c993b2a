import { type Span, SpanKind, type Telemetry } from 'bullmq';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's span and the context it is active in (traces on, and not a quiet request). */
    traceSpan?: { span: Span; context: unknown } | undefined;
  }
}

export interface TracingPluginOptions {
  telemetry: Telemetry;
  /** Requests that get no span (probes, scrapes, static files). */
  quiet: (url: string) => boolean;
}

/**
 * A SERVER span per request (`POST /v1/runs`), child of the caller's
 * `traceparent` when it sends one, opened at the first hook and ended with
 * the response; every route's handler runs with it active, so that what the
 * handler starts (the `enqueue run` span of a submission) is its child.
 * Through BullMQ's telemetry interface, as every span of Tether's.
 */
const tracingPlugin: FastifyPluginAsync<TracingPluginOptions> = async (app, { telemetry, quiet }) => {
  const { tracer, contextManager } = telemetry;
  app.decorateRequest('traceSpan', undefined);

  app.addHook('onRequest', async (request) => {
    if (quiet(request.url)) return;
    const active = contextManager.active();
    const parent = incomingContext(telemetry, request) ?? active;
    const route = request.routeOptions.url ?? 'unmatched';
    const span = tracer.startSpan(`${request.method} ${route}`, { kind: SpanKind.SERVER }, parent);
    span.setAttributes({
      'http.request.method': request.method,
      'http.route': route,
      'tether.request.id': request.id,
    });
    request.traceSpan = { span, context: span.setSpanOnContext(parent) };
  });

  app.addHook('onResponse', async (request, reply) => {
    const traced = request.traceSpan;
    if (!traced) return;
    traced.span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) traced.span.setAttribute('error.type', String(reply.statusCode));
    traced.span.end();
  });

  // Each handler runs inside its request's span (WebSocket routes keep their own handler).
  app.addHook('onRoute', (route) => {
    if ((route as { websocket?: boolean }).websocket) return;
    const handler = route.handler;
    route.handler = function traced(this: unknown, request, reply) {
      const traced = request.traceSpan;
      if (!traced) return handler.call(this as never, request, reply);
      return contextManager.with(traced.context, () => handler.call(this as never, request, reply));
    };
  });
};

/** The caller's trace context (`traceparent`, `tracestate`), as the propagator reads it. */
function incomingContext(telemetry: Telemetry, request: FastifyRequest): unknown {
  const traceparent = request.headers.traceparent;
  if (typeof traceparent !== 'string') return undefined;
  const tracestate = request.headers.tracestate;
  const carrier: Record<string, string> = { traceparent };
  if (typeof tracestate === 'string') carrier.tracestate = tracestate;
  return telemetry.contextManager.fromMetadata(telemetry.contextManager.active(), JSON.stringify(carrier));
}

export default fp(tracingPlugin, { name: 'tether-tracing', fastify: '5.x' });
