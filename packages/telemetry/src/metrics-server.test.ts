import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { MetricsPortInUseError, type MetricsServer, serveMetrics } from './metrics-server.js';
import { RunEndMetrics } from './run-metrics.js';

const servers: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(registry: Registry, port = 0) {
  const server = await serveMetrics({ registry, port, host: '127.0.0.1' });
  servers.push(server);
  return server;
}

describe('serveMetrics', () => {
  it('serves the registry at /metrics only', async () => {
    const registry = new Registry();
    new Counter({ name: 'demo_total', help: 'demo', registers: [registry] }).inc(3);
    const { port } = await serve(registry);
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toContain('demo_total 3');
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/metrics/x`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('refuses a port in use with an error that names it', async () => {
    const { port } = await serve(new Registry());
    const taken = serveMetrics({ registry: new Registry(), port, host: '127.0.0.1' });
    await expect(taken).rejects.toBeInstanceOf(MetricsPortInUseError);
    await expect(taken).rejects.toThrow(`127.0.0.1:${port}: the port is in use`);
  });
});

describe('RunEndMetrics', () => {
  it('counts ended runs by status and observes their age from the id; a tenant label only when asked', async () => {
    const plain = new Registry();
    const metrics = new RunEndMetrics(plain, { tenantLabel: false });
    // A run id made 2 s ago (its first 10 characters after `run_` are its time).
    const id = `run_${encodeTime(Date.now() - 2_000)}0000000000000000`;
    metrics.ended({ runId: id, tenant: 'acme', status: 'completed' });
    metrics.ended({ runId: id, tenant: 'acme', status: 'failed' });
    const text = await plain.metrics();
    expect(text).toContain('tether_runs_finished_total{status="completed"} 1');
    expect(text).toContain('tether_runs_finished_total{status="failed"} 1');
    expect(text).toContain('tether_run_duration_seconds_bucket{le="1"} 0');
    expect(text).toContain('tether_run_duration_seconds_bucket{le="2.5"} 2');
    expect(text).not.toContain('acme');

    const tenants = new Registry();
    new RunEndMetrics(tenants, { tenantLabel: true }).ended({
      runId: id,
      tenant: 'acme',
      status: 'cancelled',
    });
    expect(await tenants.metrics()).toContain(
      'tether_runs_finished_total{status="cancelled",tenant="acme"} 1',
    );
  });
});

function encodeTime(ms: number): string {
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = alphabet[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}
