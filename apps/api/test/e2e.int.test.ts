/**
 * End to end, over real ports: API processes (`apps/api/dist/server.js`) and
 * worker processes (`apps/worker/dist/main.js`) on the test Redis, running
 * replay runs that ask a clarify question.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Run, RunEvent } from '@tether/protocol';
import { testRedisClusterNodes, testRedisEnv, testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS } from './helper.js';
import { type Shared, startApi, startWorker, stopAll } from './processes.js';
import { openSse, type SseConnection } from './sse-client.js';

/** A run that writes a file, plans, asks which colour, and then answers. */
const SCRIPT = [
  { toolCalls: [{ name: 'write_file', arguments: { path: 'notes/plan.md', content: '# plan\n' } }] },
  {
    toolCalls: [{ name: 'todo', arguments: { todos: [{ id: '1', content: 'ask', status: 'in_progress' }] } }],
  },
  { toolCalls: [{ name: 'clarify', arguments: { question: 'Which colour?', choices: ['red', 'blue'] } }] },
  { toolCalls: [{ name: 'read_file', arguments: { path: 'notes/plan.md' } }] },
  { content: 'done' },
];

let shared: Shared;
const cleanups: (() => Promise<void>)[] = [];

async function setup(): Promise<Shared> {
  const workspaceRoot = await mkdtemp(join(tmpdir(), 'tether-e2e-'));
  cleanups.push(() => rm(workspaceRoot, { recursive: true, force: true }));
  // The test Redis: one server, or in the `cluster` project a Redis Cluster.
  shared = {
    redisUrl: testRedisTarget().url,
    redisEnv: testRedisEnv(),
    prefix: uniquePrefix('e2e'),
    workspaceRoot,
  };
  return shared;
}

afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function call<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...ACME, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function submit(base: string): Promise<string> {
  const response = await call<{ id: string }>(base, 'POST', '/v1/runs', {
    input: 'Pick a colour',
    model: { provider: 'replay', script: SCRIPT },
  });
  expect(response.status).toBe(202);
  return response.body.id;
}

/** The whole event log, read through the JSON pages as a poller does. */
async function pollEvents(base: string, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  let after = '0';
  for (let pages = 0; pages < 100; pages++) {
    const page = await call<{ data: RunEvent[]; nextCursor: string | null }>(
      base,
      'GET',
      `/v1/runs/${runId}/events?after=${after}&limit=5`,
      undefined,
      { accept: 'application/json' },
    );
    expect(page.status).toBe(200);
    events.push(...page.body.data);
    if (page.body.nextCursor === null) return events;
    if (page.body.data.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    after = page.body.nextCursor;
  }
  throw new Error('the run did not end within 100 pages');
}

async function answerWhenAsked(stream: SseConnection, base: string, runId: string, answer: string) {
  const asked = await stream.waitFor((event) => event.type === 'clarify.requested');
  const requestId = (asked.data as { requestId: string }).requestId;
  const response = await call<{ ok: boolean }>(base, 'POST', `/v1/runs/${runId}/clarify/${requestId}`, {
    answer,
  });
  expect(response).toEqual({ status: 200, body: { ok: true } });
  return requestId;
}

describe('end to end, with worker and API processes', () => {
  it('streams a run through its question: clarify.requested, the answer, clarify.answered, run.completed', async () => {
    const env = await setup();
    const [, api] = await Promise.all([startWorker(env), startApi(env, API_KEYS)]);
    const runId = await submit(api.base);
    const stream = await openSse(`${api.base}/v1/runs/${runId}/events`, ACME);
    const requestId = await answerWhenAsked(stream, api.base, runId, 'blue');
    const answered = await stream.waitFor((event) => event.type === 'clarify.answered');
    expect(answered.data).toEqual({ requestId, answer: 'blue' });
    const completed = await stream.waitFor((event) => event.type === 'run.completed');
    expect(completed.data).toEqual({ output: 'done' });
    expect(await stream.ended).toBe('end');

    // The stream held every event of the log, once, in order.
    expect(stream.events).toEqual(await pollEvents(api.base, runId));
    const run = await call<Run>(api.base, 'GET', `/v1/runs/${runId}`);
    expect(run.body).toMatchObject({ status: 'completed', output: 'done', attempts: 1 });
    const files = await call<{ files: { path: string }[] }>(api.base, 'GET', `/v1/runs/${runId}/files`);
    expect(files.body.files.map((file) => file.path)).toEqual(['notes/plan.md']);
    const file = await fetch(`${api.base}/v1/runs/${runId}/files/notes/plan.md`, { headers: ACME });
    expect(await file.text()).toBe('# plan\n');
  });

  it('gets a poll-only client to the same result', async () => {
    const env = await setup();
    const [, api] = await Promise.all([startWorker(env), startApi(env, API_KEYS)]);
    const runId = await submit(api.base);
    const until = async (done: (run: Run) => boolean): Promise<Run> => {
      for (let polls = 0; polls < 400; polls++) {
        const run = (await call<Run>(api.base, 'GET', `/v1/runs/${runId}`)).body;
        if (done(run)) return run;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the run did not get there');
    };
    const waiting = await until((run) => run.status === 'waiting_for_input');
    expect(waiting.pendingClarify).toMatchObject({ question: 'Which colour?', choices: ['red', 'blue'] });
    // Saved with the turn that asked: a waiting run shows the model that answered.
    expect(waiting.model).toEqual({ profile: 'replay', name: 'replay' });
    const requestId = waiting.pendingClarify?.requestId ?? '';
    const answer = await call(api.base, 'POST', `/v1/runs/${runId}/clarify/${requestId}`, { answer: 'red' });
    expect(answer.status).toBe(200);
    const again = await call<{ error: { code: string } }>(
      api.base,
      'POST',
      `/v1/runs/${runId}/clarify/${requestId}`,
      {
        answer: 'blue',
      },
    );
    expect(again.status).toBe(409);
    const done = await until((run) => run.status === 'completed');
    expect(done).toMatchObject({ output: 'done', todos: [{ id: '1', status: 'in_progress' }] });
    const types = (await pollEvents(api.base, runId)).map((event) => event.type);
    for (const type of ['clarify.requested', 'clarify.answered', 'run.completed']) {
      expect(
        types.filter((t) => t === type),
        type,
      ).toHaveLength(1);
    }
    expect(types.at(-1)).toBe('run.completed');
    const cancel = await call(api.base, 'POST', `/v1/runs/${runId}/cancel`);
    expect(cancel.status).toBe(409);
  });

  it('delivers every event exactly once across disconnects and Last-Event-ID reconnects', async () => {
    const env = await setup();
    const [, api] = await Promise.all([startWorker(env), startApi(env, API_KEYS)]);
    const runId = await submit(api.base);
    const url = `${api.base}/v1/runs/${runId}/events`;
    const received: RunEvent[] = [];

    // First connection: leave after three events, while the run is going.
    const first = await openSse(url, ACME);
    await first.waitFor(() => first.events.length >= 3);
    first.close();
    received.push(...first.events);

    // Second: resume, answer the question, leave as soon as the answer is in the log. (Events
    // arrive in batches: the question may already have come on the first connection.)
    const second = await openSse(url, { ...ACME, 'last-event-id': received.at(-1)?.id ?? '0' });
    const askedBefore = received.find((event) => event.type === 'clarify.requested');
    if (askedBefore) {
      const requestId = (askedBefore.data as { requestId: string }).requestId;
      expect(
        await call(api.base, 'POST', `/v1/runs/${runId}/clarify/${requestId}`, { answer: 'blue' }),
      ).toEqual({
        status: 200,
        body: { ok: true },
      });
    } else {
      await answerWhenAsked(second, api.base, runId, 'blue');
    }
    await second.waitFor((event) => event.type === 'clarify.answered');
    second.close();
    received.push(...second.events);

    // Third: resume to the end.
    const third = await openSse(url, { ...ACME, 'last-event-id': received.at(-1)?.id ?? '0' });
    expect(await third.ended).toBe('end');
    received.push(...third.events);

    const log = await pollEvents(api.base, runId);
    expect(log.at(-1)?.type).toBe('run.completed');
    expect(received.map((event) => event.id)).toEqual(log.map((event) => event.id));
    expect(received).toEqual(log);
  });

  it('resumes a run streamed through one API instance when the answer goes to another (two APIs, two workers)', async () => {
    const env = await setup();
    const [, , apiA, apiB] = await Promise.all([
      startWorker(env, 'worker-a'),
      startWorker(env, 'worker-b'),
      startApi(env, API_KEYS, 'api-a'),
      startApi(env, API_KEYS, 'api-b'),
    ]);
    const runs = await Promise.all([submit(apiA.base), submit(apiB.base), submit(apiA.base)]);
    await Promise.all(
      runs.map(async (runId) => {
        const stream = await openSse(`${apiA.base}/v1/runs/${runId}/events`, ACME);
        await answerWhenAsked(stream, apiB.base, runId, 'red');
        await stream.waitFor((event) => event.type === 'run.completed');
        expect(await stream.ended).toBe('end');
        expect(stream.events).toEqual(await pollEvents(apiB.base, runId));
      }),
    );
    const finished = await Promise.all(runs.map((runId) => call<Run>(apiB.base, 'GET', `/v1/runs/${runId}`)));
    expect(finished.map((run) => run.body.status)).toEqual(['completed', 'completed', 'completed']);
  });

  it("/readyz lists every live worker's sandbox, and forgets a worker that stopped", async () => {
    const s = await setup();
    const api = await startApi(s, API_KEYS);
    const plain = await startWorker(s, 'worker-none', 1);
    await startWorker(s, 'worker-auto', 1, { TETHER_SANDBOX: 'auto', TETHER_SANDBOX_MAX_PROCESSES: '64' });
    type Ready = { status: string; workers: { id: string; sandbox: Record<string, unknown> }[] };
    // A worker lists itself right after it logs that it is ready.
    let ready = await call<Ready>(api.base, 'GET', '/readyz');
    for (let i = 0; i < 100 && ready.body.workers.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      ready = await call<Ready>(api.base, 'GET', '/readyz');
    }
    expect(ready.status).toBe(200);
    expect(ready.body.workers.map((w) => w.id)).toEqual(['worker-auto', 'worker-none']);
    const [auto, none] = ready.body.workers;
    expect(none?.sandbox).toMatchObject({
      requested: 'none',
      effective: 'none',
      reason: 'TETHER_SANDBOX=none',
    });
    expect(['bwrap', 'none']).toContain(auto?.sandbox.effective);
    // auto never runs a half sandbox silently: when it is not bwrap, the reason is there.
    if (auto?.sandbox.effective === 'none') expect(auto.sandbox.reason).toBeTruthy();
    expect(plain.output()).toContain(
      'TETHER_SANDBOX=none: bash runs without a sandbox, unsafe with untrusted models',
    );
    await plain.stop();
    const after = await call<{ workers: { id: string }[] }>(api.base, 'GET', '/readyz');
    expect(after.body.workers.map((w) => w.id)).toEqual(['worker-auto']);
  });

  it('shuts down on SIGTERM: open streams end cleanly, Redis closes, the process exits 0', async () => {
    const env = await setup();
    const api = await startApi(env, API_KEYS);
    // No worker: the run stays queued and its stream stays open.
    const runId = await submit(api.base);
    const stream = await openSse(`${api.base}/v1/runs/${runId}/events`, ACME);
    await stream.waitFor((event) => event.type === 'run.queued');
    const exited = new Promise((resolve) => {
      api.child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    api.child.kill('SIGTERM');
    expect(await stream.ended).toBe('end');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(api.output()).toMatch(/"msg":"stopped"/);
  });

  // Defined in the cluster project only (not skipped in the other): it is about a cluster.
  (testRedisClusterNodes() !== undefined ? it : () => undefined)(
    'on a Redis Cluster, the API and the worker say at start that REDIS_URL is ignored, and use the cluster',
    async () => {
      // A REDIS_URL where nothing answers: the processes must not use it.
      const s = { ...(await setup()), redisUrl: 'redis://127.0.0.1:1' };
      const [worker, api] = await Promise.all([startWorker(s, 'worker-c', 1), startApi(s, API_KEYS)]);
      const note =
        /Redis Cluster through the seed nodes of REDIS_CLUSTER_NODES \([^)]+\); REDIS_URL is ignored/;
      expect(api.output()).toMatch(note);
      expect(worker.output()).toMatch(note);
      // The API sees the worker that listed itself through the cluster.
      let ready = await call<{ workers: { id: string }[] }>(api.base, 'GET', '/readyz');
      for (let i = 0; i < 100 && ready.body.workers?.length !== 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        ready = await call<{ workers: { id: string }[] }>(api.base, 'GET', '/readyz');
      }
      expect(ready.status).toBe(200);
      expect(ready.body.workers.map((w) => w.id)).toEqual(['worker-c']);
    },
  );
});
