/**
 * The crew over real ports (API and worker processes, on a Redis Cluster in
 * the `cluster` project): a parent submitted with the `crew` toolset, its
 * children read, streamed and cancelled through the API like any run, and
 * kept from other tenants; a session's run delegating too.
 */
import type { Run, RunEvent } from '@tether/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS, BETA } from './helper.js';
import { call, deployment, startApi, startWorker, stopAll } from './processes.js';
import { openSse } from './sse-client.js';

afterEach(stopAll);

const TERMINAL = ['completed', 'failed', 'cancelled'];

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const runOf = (base: string, id: string, done = (run: Run) => TERMINAL.includes(run.status)) =>
  until(async () => (await call<Run>(base, 'GET', `/v1/runs/${id}`)).body, done, `run ${id}`);

const parentBody = (tasks: { goal: string }[], children: unknown[]) => ({
  input: 'lead',
  toolsets: ['base', 'planning', 'crew'],
  model: {
    provider: 'replay',
    script: [{ toolCalls: [{ name: 'delegate_parallel', arguments: { tasks } }] }, { content: 'led' }],
    children,
  },
});

describe('crew over the API', () => {
  it('takes the crew toolset, lists children, streams their events on the parent, and keeps other tenants out', async () => {
    const shared = await deployment('crew-api');
    await startWorker(shared);
    const api = await startApi(shared, API_KEYS);
    const catalog = await call<{ toolsets: string[]; tools: { name: string }[] }>(
      api.base,
      'GET',
      '/v1/tools',
    );
    expect(catalog.body.toolsets).toContain('crew');
    expect(catalog.body.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['delegate_task', 'delegate_parallel', 'escalate']),
    );

    const submitted = await call<{ id: string }>(
      api.base,
      'POST',
      '/v1/runs',
      parentBody(
        [{ goal: 'first' }, { goal: 'second' }],
        [
          {
            match: 'first',
            script: [
              {
                toolCalls: [
                  { name: 'write_file', arguments: { path: 'first.txt', content: 'by the child' } },
                ],
              },
              { content: 'child done' },
            ],
          },
          { script: [{ content: 'child done' }] },
        ],
      ),
    );
    expect(submitted.status).toBe(202);
    const parentId = submitted.body.id;
    const stream = await openSse(`${api.base}/v1/runs/${parentId}/events`, ACME);
    const parent = await runOf(api.base, parentId);
    expect(parent.status).toBe('completed');
    expect(parent.children?.map((c) => [c.index, c.status])).toEqual([
      [0, 'completed'],
      [1, 'completed'],
    ]);
    const childId = parent.children?.[0]?.id as string;
    const child = (await call<Run>(api.base, 'GET', `/v1/runs/${childId}`)).body;
    expect(child).toMatchObject({
      parentRunId: parentId,
      rootRunId: parentId,
      depth: 1,
      output: 'child done',
    });
    // The child worked in its tree's workspace: its files are the parent's, read through either.
    for (const id of [parentId, childId]) {
      const files = await call<{ files: { path: string }[] }>(api.base, 'GET', `/v1/runs/${id}/files`);
      expect(files.body.files.map((f) => f.path)).toContain('first.txt');
    }
    // Another tenant: 404 for the child as for the parent, and nothing to cancel.
    for (const id of [parentId, childId]) {
      expect((await call(api.base, 'GET', `/v1/runs/${id}`, undefined, BETA)).status).toBe(404);
      expect((await call(api.base, 'GET', `/v1/runs/${id}/events`, undefined, BETA)).status).toBe(404);
      expect((await call(api.base, 'POST', `/v1/runs/${id}/cancel`, undefined, BETA)).status).toBe(404);
    }
    // The parent's stream: the children's start and end, then its own end.
    expect(await stream.ended).toBe('end');
    const types = stream.events.map((e: RunEvent) => e.type);
    expect(types.filter((t) => t === 'child.started')).toHaveLength(2);
    expect(types.filter((t) => t === 'child.finished')).toHaveLength(2);
    expect(types.at(-1)).toBe('run.completed');
    // Children are listed among the tenant's runs.
    const list = await call<{ data: Run[] }>(api.base, 'GET', '/v1/runs?limit=10');
    expect(list.body.data.map((r) => r.id)).toEqual(expect.arrayContaining([parentId, childId]));
  }, 60_000);

  it('refuses bad crew input at submit clearly, and stays healthy', async () => {
    const shared = await deployment('crew-api-bad');
    const api = await startApi(shared, API_KEYS);
    const bad = await call<{ error: { code: string; message: string } }>(api.base, 'POST', '/v1/runs', {
      ...parentBody([{ goal: 'x' }], [{ script: [{ content: 'ok' }], extra: true }]),
    });
    expect(bad.status).toBe(400);
    // A child's replay script is the replay model's: its problem is named as a script's.
    expect(bad.body.error.code).toBe('ERR_MODEL_REPLAY_SCRIPT_INVALID');
    expect(bad.body.error.message).toMatch(/body\.model\.children\[0\]\.extra is not a known field/);
    expect((await call(api.base, 'GET', '/v1/runs?limit=1')).status).toBe(200);
  }, 30_000);

  it('cancelling a waiting parent over the API cancels its children', async () => {
    const shared = await deployment('crew-api-cancel');
    await startWorker(shared);
    const api = await startApi(shared, API_KEYS);
    const sleepy = [
      { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 30' } }] },
      { content: 'slept' },
    ];
    const submitted = await call<{ id: string }>(
      api.base,
      'POST',
      '/v1/runs',
      parentBody([{ goal: 'a' }, { goal: 'b' }], [{ script: sleepy }]),
    );
    const parentId = submitted.body.id;
    const waiting = await runOf(api.base, parentId, (run) => run.status === 'waiting_for_children');
    expect(waiting.children).toHaveLength(2);
    const cancelled = await call<{ status: string }>(api.base, 'POST', `/v1/runs/${parentId}/cancel`);
    expect(cancelled.status).toBe(202);
    for (const c of waiting.children ?? []) {
      expect((await runOf(api.base, c.id)).status).toBe('cancelled');
    }
    expect((await runOf(api.base, parentId)).status).toBe('cancelled');
  }, 60_000);
});
