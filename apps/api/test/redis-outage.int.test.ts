/**
 * Redis goes away under a running deployment: an API process and a worker
 * process on a redis-server of the test's own, killed (a crash: its
 * connections drop, it comes back on the same port with its append-only
 * file) or paused (SIGSTOP: it hangs with its connections open). While it is
 * gone the API answers 503 `ERR_UNAVAILABLE` with `Retry-After`, `/readyz`
 * 503 and `/healthz` 200; each process logs the outage once; when it is back
 * both go on without a restart, and no run submitted before is lost.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Run, TERMINAL_EVENT_TYPES } from '@tether/protocol';
import { type OwnRedis, startOwnRedis, uniquePrefix } from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS, build, replayRun } from './helper.js';
import { type Shared, type Spawned, startApi, startWorker, stopAll } from './processes.js';
import { openSse } from './sse-client.js';

const OUTAGE_STARTED = 'Redis is unreachable';
const OUTAGE_ENDED = 'Redis is reachable again';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function temporary(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `tether-outage-${name}-`));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A deployment on a Redis of its own: one API, one worker of concurrency 2. */
async function deployment(): Promise<{ redis: OwnRedis; api: Spawned & { base: string }; worker: Spawned }> {
  const redis = await startOwnRedis();
  cleanups.push(() => redis.stop());
  const shared: Shared = {
    redisUrl: redis.url,
    prefix: uniquePrefix('outage'),
    workspaceRoot: await temporary('ws'),
  };
  const [worker, api] = await Promise.all([startWorker(shared, 'worker', 2), startApi(shared, API_KEYS)]);
  return { redis, api, worker };
}

async function call(base: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...ACME, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** A run whose one tool call waits until `gate` exists, then answers. */
function gatedRun(gate: string) {
  return {
    input: 'wait for the gate',
    model: {
      provider: 'replay',
      script: [
        {
          toolCalls: [
            {
              name: 'bash',
              arguments: { command: `while [ ! -e '${gate}' ]; do sleep 0.02; done; echo through` },
            },
          ],
        },
        { content: 'done' },
      ],
    },
  };
}

const quickRun = { input: 'quick', model: { provider: 'replay', script: [{ content: 'quick' }] } };

async function submit(base: string, body: unknown): Promise<string> {
  const response = await call(base, 'POST', '/v1/runs', body);
  expect(response.status).toBe(202);
  return response.body.id as string;
}

/** What every route that needs Redis, and the health routes, answer while it is gone. */
async function expectUnavailable(base: string, runId: string): Promise<void> {
  for (const [method, path, body] of [
    ['POST', '/v1/runs', quickRun],
    ['GET', `/v1/runs/${runId}`, undefined],
    ['GET', '/v1/runs', undefined],
    ['GET', `/v1/runs/${runId}/events`, undefined],
  ] as const) {
    const response = await call(base, method, path, body);
    expect({ route: `${method} ${path}`, status: response.status, code: response.body.error }).toEqual({
      route: `${method} ${path}`,
      status: 503,
      code: expect.objectContaining({ code: 'ERR_UNAVAILABLE' }),
    });
    expect(response.retryAfter).toMatch(/^[1-9]\d*$/);
  }
  expect((await call(base, 'GET', '/readyz')).status).toBe(503);
  expect((await call(base, 'GET', '/healthz')).status).toBe(200);
}

/** Resolves with the run once it has ended, following its event stream (resumed with Last-Event-ID if it breaks). */
async function ended(base: string, runId: string): Promise<Run> {
  let last = '0';
  for (let streams = 0; streams < 5; streams++) {
    const stream = await openSse(`${base}/v1/runs/${runId}/events`, { ...ACME, 'last-event-id': last });
    expect(stream.status).toBe(200);
    await stream.ended;
    last = stream.frames.at(-1)?.id ?? last;
    if (stream.events.some((event) => TERMINAL_EVENT_TYPES.includes(event.type))) break;
  }
  return (await call(base, 'GET', `/v1/runs/${runId}`)).body as unknown as Run;
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

/** Each process logged one warning when the outage began and one line when it ended, and is still running. */
function expectOneOutageLogged(...processes: Spawned[]): void {
  for (const spawned of processes) {
    const output = spawned.output();
    expect(output, spawned.name).not.toContain('Unhandled error event');
    expect({
      process: spawned.name,
      started: occurrences(output, OUTAGE_STARTED),
      ended: occurrences(output, OUTAGE_ENDED),
      running: spawned.child.exitCode === null && spawned.child.signalCode === null,
    }).toEqual({ process: spawned.name, started: 1, ended: 1, running: true });
  }
}

/** Resolves once every process has logged `line`. */
function logged(line: string, ...processes: Spawned[]): Promise<unknown> {
  const pattern = new RegExp(line);
  return Promise.all(processes.map((spawned) => spawned.waitFor(pattern)));
}

describe('when Redis goes away', () => {
  it('is not there at start: the run routes answer 503 ERR_UNAVAILABLE and document it, the others serve', async () => {
    const { app } = await build({ env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    const submitted = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(),
    });
    expect(submitted.statusCode).toBe(503);
    expect(submitted.json()).toMatchObject({ error: { code: 'ERR_UNAVAILABLE' } });
    expect(submitted.headers['retry-after']).toBe('1');
    // Authentication comes first: a caller without a key learns nothing about Redis.
    expect((await app.inject({ method: 'GET', url: '/v1/runs' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/tools', headers: ACME })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);

    const spec = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    }>();
    const answers = (path: string, method: string) =>
      Object.keys(spec.paths[path]?.[method]?.responses ?? {});
    expect(answers('/v1/runs', 'post')).toContain('503');
    expect(answers('/v1/runs/{id}/events', 'get')).toContain('503');
    expect(answers('/v1/tools', 'get')).not.toContain('503');
  });

  it('is killed: 503 ERR_UNAVAILABLE at once, then both processes go on and every run submitted before completes', async () => {
    const { redis, api, worker } = await deployment();
    const done = await submit(api.base, quickRun);
    expect((await ended(api.base, done)).status).toBe('completed');
    // Two runs in a tool call when Redis goes (the worker's two slots), two queued behind them.
    const gate = join(await temporary('gate'), 'open');
    const gated: string[] = [];
    for (let i = 0; i < 4; i++) gated.push(await submit(api.base, gatedRun(gate)));
    const following = await openSse(`${api.base}/v1/runs/${gated[0]}/events`, ACME);
    await following.waitFor((event) => event.type === 'tool.call');

    await redis.kill();
    await expectUnavailable(api.base, done);
    // The tool calls end while Redis is down: their results are saved once it is back.
    await writeFile(gate, '');
    await logged(OUTAGE_STARTED, api, worker);
    await expectUnavailable(api.base, done);

    await redis.restart();
    await logged(OUTAGE_ENDED, api, worker);
    // The stream open across the outage ends when the subscriber is back (its client resumes from the log
    // with Last-Event-ID): cleanly as a rule, but under a loaded CI machine it was once seen closed instead,
    // which the client treats the same way. Either way it must end, not hang.
    expect(['end', 'close']).toContain(await following.ended);
    const after = await submit(api.base, quickRun);
    expect((await call(api.base, 'GET', '/readyz')).status).toBe(200);
    const runs = await Promise.all([...gated, after].map((id) => ended(api.base, id)));
    expect(runs.map((run) => ({ id: run.id, status: run.status, output: run.output }))).toEqual([
      ...gated.map((id) => ({ id, status: 'completed', output: 'done' })),
      { id: after, status: 'completed', output: 'quick' },
    ]);
    expectOneOutageLogged(api, worker);
  });

  it('hangs (SIGSTOP): 503 ERR_UNAVAILABLE once it is noticed, then both processes go on when it answers again', async () => {
    const { redis, api, worker } = await deployment();
    const before = await submit(api.base, quickRun);
    expect((await ended(api.base, before)).status).toBe('completed');

    redis.pause();
    // Its connections stay open: the processes notice when PING goes unanswered.
    await logged(OUTAGE_STARTED, api, worker);
    await expectUnavailable(api.base, before);

    redis.resume();
    await logged(OUTAGE_ENDED, api, worker);
    const after = await submit(api.base, quickRun);
    expect((await ended(api.base, after)).status).toBe('completed');
    expectOneOutageLogged(api, worker);
  });
});
