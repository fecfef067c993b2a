import { randomBytes } from 'node:crypto';
import { Lease } from '@tether/store/leases';
import { ElectedQueueCounts, JOB_STATES, queueJobsGauge } from '@tether/telemetry';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from 'prom-client';
import type { ApiConfig } from '../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: ApiMetrics;
  }
}

export interface ApiMetrics {
  registry: Registry;
  runsSubmitted: Counter<'created'>;
  sseEnded: Counter<'reason'>;
  /** The queue's counts, read by this process only while it holds the queue-reader lease. */
  queueCounts: ElectedQueueCounts;
}

export interface MetricsPluginOptions {
  config: Readonly<ApiConfig>;
  /** The app's registry (not prom-client's global one, so several apps in one test process do not collide). */
  registry: Registry;
}

/**
 * `GET /metrics` in the Prometheus text format, from the app's registry. The
 * queue gauges are read from Redis at scrape time by one process of the
 * deployment, the holder of the queue-reader lease (an API or a worker):
 * the other processes leave them out.
 */
const metricsPlugin: FastifyPluginAsync<MetricsPluginOptions> = async (app, { config, registry }) => {
  collectDefaultMetrics({ register: registry });

  const http = new Histogram({
    name: 'tether_http_request_duration_seconds',
    help: 'HTTP request duration by route and status (SSE streams are counted in tether_sse_*).',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const runsSubmitted = new Counter({
    name: 'tether_runs_submitted_total',
    help: 'POST /v1/runs accepted by this process; created="false" for idempotent replays.',
    labelNames: ['created'] as const,
    registers: [registry],
  });

  const lease = new Lease({
    redis: app.redis,
    key: app.keys.queueMetricsLease,
    holder: `tether-api:${config.instanceId}:${randomBytes(4).toString('hex')}`,
    onError: (error) => app.log.debug({ err: error }, 'metrics: could not look at the queue-reader lease'),
  });
  const queueCounts = new ElectedQueueCounts({
    lease,
    started: lease.start(),
    read: () => app.runs.jobCounts(...JOB_STATES),
    // While Redis is unreachable the gauges are left out (the breaker has reported the outage).
    available: () => app.breaker.available,
    onError: (error) => app.log.warn({ err: error }, 'metrics: could not read the queue counts'),
  });
  app.addHook('onClose', () => lease.stop());
  const jobCounts = () => queueCounts.current();

  queueJobsGauge(registry, queueCounts);
  new Gauge({
    name: 'tether_runs',
    help: 'Live runs by status, from the queue (read by the queue-reader lease holder only, as tether_queue_jobs): queued (waiting, prioritized), running (active), waiting_for_input (delayed: suspended on a question, waiting for crew children, or in retry backoff).',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const current = await jobCounts();
      if (!current) return;
      const n = (state: string) => current[state] ?? 0;
      this.set({ status: 'queued' }, n('waiting') + n('prioritized'));
      this.set({ status: 'running' }, n('active'));
      this.set({ status: 'waiting_for_input' }, n('delayed'));
    },
  });
  new Gauge({
    name: 'tether_runs_waiting_for_input',
    help: 'Runs suspended on a clarify question (delayed jobs; includes runs in retry backoff).',
    registers: [registry],
    async collect() {
      this.reset();
      const current = await jobCounts();
      if (current) this.set(current.delayed ?? 0);
    },
  });
  new Gauge({
    name: 'tether_sse_clients',
    help: 'Open SSE event streams on this process.',
    registers: [registry],
    collect() {
      // The streams plugin registers after this one; scrapes only happen once both are loaded.
      this.set(app.streams.size);
    },
  });
  new Gauge({
    name: 'tether_ws_clients',
    help: 'Open WebSockets of the gateway (GET /v1/ws) on this process.',
    registers: [registry],
    collect() {
      this.set(app.sockets.size);
    },
  });
  const sseEnded = new Counter({
    name: 'tether_sse_streams_ended_total',
    help: 'SSE streams ended on this process, by reason: terminal (the run ended), client (disconnected), slow (dropped: too much unsent), shutdown, resync (subscriber reconnected), error.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'tether_event_hub_channels',
    help: 'Runs with live listeners on the one subscriber connection of this process.',
    registers: [registry],
    collect() {
      this.set(app.hub.channels);
    },
  });

  app.decorate('metrics', { registry, runsSubmitted, sseEnded, queueCounts });

  app.addHook('onResponse', async (request, reply) => {
    http.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
  });

  app.get(
    '/metrics',
    { schema: { hide: true }, config: { auth: 'public', rateLimit: false } },
    async (_request, reply) => {
      const text = await registry.metrics();
      return reply.type(registry.contentType).send(text);
    },
  );
};

export default fp(metricsPlugin, {
  name: 'tether-metrics',
  fastify: '5.x',
  dependencies: ['tether-queue'],
});
