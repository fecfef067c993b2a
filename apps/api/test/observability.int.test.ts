/**
 * The API's side of observability, in process: quiet request logs, request ids carried into the
 * job, the queue gauges read by one process only, and the runs it ends counted.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { testRedisEnv, uniquePrefix } from '@tether/testing';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createApp } from '../src/app.js';
import { loadApiConfig } from '../src/config.js';
import { ACME, API_KEYS, build, submit } from './helper.js';
import { openWs } from './ws-client.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function metricsOf(app: Awaited<ReturnType<typeof build>>['app']): Promise<string> {
  return (await app.inject({ method: 'GET', url: '/metrics' })).body;
}

describe('request logs', () => {
  it('writes one line per request: probes, scrapes, static files and polling reads at debug, the others at info', async () => {
    interface Line {
      level: number;
      msg: string;
      reqId: string;
      req?: { method: string; url: string };
      res?: { statusCode: number };
      responseTime?: number;
    }
    const lines: Line[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    // A built console of its own: its page answers 200 whether apps/console is built or not.
    const consoleDir = await mkdtemp(join(tmpdir(), 'tether-console-'));
    onTestFinished(() => rm(consoleDir, { recursive: true, force: true }));
    await mkdir(join(consoleDir, 'assets'));
    await writeFile(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
    const config = loadApiConfig({
      ...testRedisEnv(),
      TETHER_QUEUE_PREFIX: uniquePrefix('obs'),
      TETHER_API_KEYS: API_KEYS,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_CONSOLE_DIR: consoleDir,
      LOG_LEVEL: 'debug',
    });
    const app = createApp(config, pino({ level: 'debug' }, sink));
    onTestFinished(() => app.close());
    await app.ready();
    // Each request with an id of its own: a refused one (401) is answered before X-Request-Id is echoed.
    let requests = 0;
    const linesOf = async (method: 'GET' | 'POST', url: string, headers = {}, payload?: object) => {
      const id = `obs-${++requests}`;
      await app.inject({
        method,
        url,
        headers: { ...headers, 'x-request-id': id },
        ...(payload ? { payload } : {}),
      });
      return lines.filter(
        (line) =>
          line.reqId === id && /^(incoming request|request completed|request errored)$/.test(line.msg),
      );
    };
    const levelsOf = async (url: string, headers = {}) =>
      (await linesOf('GET', url, headers)).map((l) => l.level);

    for (const url of [
      '/healthz',
      '/readyz',
      '/metrics',
      '/openapi.json',
      '/docs/static/index.html',
      '/console/',
      '/console/runs/abc',
    ]) {
      expect(await levelsOf(url), url).toEqual([20]);
    }
    // Polling reads: the lists of runs and sessions, and one run or session.
    const runId = await submit(app);
    for (const url of ['/v1/runs', `/v1/runs?limit=5`, `/v1/runs/${runId}`, '/v1/sessions']) {
      expect(await levelsOf(url, ACME), url).toEqual([20]);
    }
    // Other reads, a read that failed, a probe's URL under another method, and writes stay at info.
    expect(await levelsOf('/v1/tools', ACME)).toEqual([30]);
    expect(
      await levelsOf(`/v1/runs/${runId}/events?limit=1`, { ...ACME, accept: 'application/json' }),
    ).toEqual([30]);
    expect(await levelsOf('/v1/runs/run_unknown', ACME)).toEqual([30]);
    expect(await levelsOf('/v1/runs')).toEqual([30]);
    expect((await linesOf('POST', '/healthz')).map((l) => l.level)).toEqual([30]);
    const [submitted] = await linesOf('POST', '/v1/runs', ACME, {
      input: 'x',
      model: { provider: 'replay', script: [{ content: 'ok' }] },
    });
    // The one line says what was asked, the answer and its time.
    expect(submitted).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { method: 'POST', url: '/v1/runs' },
      res: { statusCode: 202 },
    });
    expect(submitted?.responseTime).toBeGreaterThan(0);
    // A WebSocket never completes as a response: its one line is its upgrade's, at info.
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const socket = await openWs(`ws://127.0.0.1:${port}/v1/ws`, { ...ACME, 'x-request-id': 'obs-ws' });
    await socket.roundTrip();
    socket.close();
    await socket.closed;
    expect(lines.filter((line) => line.reqId === 'obs-ws').map(({ level, msg }) => [level, msg])).toEqual([
      [30, 'websocket upgrade'],
    ]);
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
