/**
 * The API's side of observability, in process: quiet request logs, request ids carried into the
 * job, the queue gauges read by one process only, and the runs it ends counted.
 */
import { Writable } from 'node:stream';
import { testRedisEnv, uniquePrefix } from '@tether/testing';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createApp } from '../src/app.js';
import { loadApiConfig } from '../src/config.js';
import { ACME, API_KEYS, build, submit } from './helper.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function metricsOf(app: Awaited<ReturnType<typeof build>>['app']): Promise<string> {
  return (await app.inject({ method: 'GET', url: '/metrics' })).body;
}

describe('request logs', () => {
  it('puts the lines of probes, scrapes and static files at debug level, and the others at info', async () => {
    const lines: { level: number; msg: string; req?: { url: string }; reqId: string }[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const config = loadApiConfig({
      ...testRedisEnv(),
      TETHER_QUEUE_PREFIX: uniquePrefix('obs'),
      TETHER_API_KEYS: API_KEYS,
      LOG_LEVEL: 'debug',
    });
    const app = createApp(config, pino({ level: 'debug' }, sink));
    onTestFinished(() => app.close());
    await app.ready();
    const levelsOf = async (url: string, headers = {}) => {
      const response = await app.inject({ method: 'GET', url, headers });
      const id = String(response.headers['x-request-id']);
      return lines
        .filter((line) => line.reqId === id && /^(incoming request|request completed)$/.test(line.msg))
        .map((line) => line.level);
    };
    for (const url of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs/static/index.html']) {
      expect(await levelsOf(url), url).toEqual([20, 20]);
    }
    expect(await levelsOf('/v1/tools', ACME)).toEqual([30, 30]);
  });
});

describe('request ids', () => {
  it("keeps a sane X-Request-Id, echoes it, and carries it in the run's job; makes a UUID otherwise", async () => {
    const { app } = await build();
    const sent = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, 'x-request-id': 'req-from-client.1' },
      payload: { input: 'x', model: { provider: 'replay', script: [{ content: 'ok' }] } },
    });
    expect(sent.headers['x-request-id']).toBe('req-from-client.1');
    const runId = sent.json<{ id: string }>().id;
    expect((await app.runs.getJob(runId))?.data).toEqual({
      runId,
      tenant: 'acme',
      requestId: 'req-from-client.1',
    });

    const insane = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'a b' } });
    expect(insane.headers['x-request-id']).toMatch(UUID);
    const other = await app.inject({ method: 'GET', url: '/healthz' });
    expect(other.headers['x-request-id']).toMatch(UUID);
    expect(other.headers['x-request-id']).not.toBe(insane.headers['x-request-id']);
  });
});

describe('metrics', () => {
  it('reads the queue gauges in one process of a deployment only, and another takes over when it stops', async () => {
    const prefix = uniquePrefix('obs');
    const first = await build({ env: { TETHER_QUEUE_PREFIX: prefix }, keepOpen: true });
    const second = await build({ env: { TETHER_QUEUE_PREFIX: prefix } });
    await submit(first.app);
    const gauge = /^tether_queue_jobs\{state="waiting"\} (\d+)$/m;
    expect(first.app.metrics.queueCounts.elected).toBe(true);
    expect(second.app.metrics.queueCounts.elected).toBe(false);
    expect(gauge.exec(await metricsOf(first.app))?.[1]).toBe('1');
    const text = await metricsOf(second.app);
    expect(text).toContain('# TYPE tether_queue_jobs gauge');
    expect(text).not.toMatch(gauge);
    expect(text).not.toMatch(/^tether_runs\{/m);

    await first.app.close();
    await expect
      .poll(async () => gauge.exec(await metricsOf(second.app))?.[1], { timeout: 10_000, interval: 200 })
      .toBe('1');
  });

  it('counts the runs this API ends (a cancel of a queued run), with their duration', async () => {
    const { app } = await build();
    const runId = await submit(app);
    const cancelled = await app.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel`, headers: ACME });
    expect(cancelled.statusCode).toBe(202);
    const text = await metricsOf(app);
    expect(text).toContain('tether_runs_finished_total{status="cancelled"} 1');
    expect(text).toMatch(/^tether_run_duration_seconds_count 1$/m);
  });
});
