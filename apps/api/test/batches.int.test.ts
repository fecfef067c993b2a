/**
 * Batches over real ports: an API process and a worker process running replay runs. A batch is
 * created all or none (a refused item names its index and nothing is made), read with its runs
 * counted by status and paged, cancelled, kept to its tenant; when its last run ends, that run's
 * log has `batch.completed` once, just before its own end, and a webhook endpoint gets it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Batch, CreateBatchResponse, Run, RunEvent } from '@tether/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, ACME_KEY, API_KEYS, BETA } from './helper.js';
import {
  call,
  deployment,
  eventually,
  startApi,
  startWorker,
  stopAll,
  webhookReceiver,
} from './processes.js';

const cleanups: (() => Promise<void>)[] = [];
const CLI = fileURLToPath(new URL('../../../packages/client/dist/cli.js', import.meta.url));

/** The built `tether` CLI: its exit code and what it printed. */
function tether(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}
afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const ENV = {
  TETHER_ALLOW_REPLAY: '1',
  TETHER_SECRETS_KEY: randomBytes(32).toString('base64'),
  TETHER_WEBHOOK_ALLOW_HTTP: '1',
  TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
};

/** A run body playing `script`. */
const run = (input: string, script: unknown[] = [{ content: `done: ${input}` }]) => ({
  input,
  model: { provider: 'replay', script },
  toolsets: ['planning'],
});

async function eventsOf(base: string, runId: string): Promise<RunEvent[]> {
  const page = await call<{ data: RunEvent[] }>(
    base,
    'GET',
    `/v1/runs/${runId}/events?limit=1000`,
    undefined,
    {
      ...ACME,
      accept: 'application/json',
    },
  );
  return page.body.data;
}

describe('batches', () => {
  it('creates every run or none, counts them by status, and tells batch.completed once on the last', async () => {
    const shared = await deployment('batches');
    const api = await startApi(shared, API_KEYS, 'api', ENV);
    const hook = await webhookReceiver();
    cleanups.push(hook.close);
    expect(
      (await call(api.base, 'POST', '/v1/webhooks', { url: hook.url, events: ['batch.completed'] })).status,
    ).toBe(201);

    // A refused item names its index, and nothing is created.
    const before = await call<{ data: Run[] }>(api.base, 'GET', '/v1/runs?limit=100');
    const refused = await call<{ error: { code: string; message: string } }>(
      api.base,
      'POST',
      '/v1/batches',
      {
        runs: [run('one'), run('two'), { ...run('three'), toolsets: ['no_such_toolset'] }],
      },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/^runs\[2\]: /);
    const timed = await call<{ error: { message: string } }>(api.base, 'POST', '/v1/batches', {
      runs: [run('one'), { ...run('two'), delayMs: 1_000 }],
    });
    expect(timed.status).toBe(400);
    expect(timed.body.error.message).toMatch(/^runs\[1\]\.delayMs: /);
    const empty = await call(api.base, 'POST', '/v1/batches', { runs: [] });
    expect(empty.status).toBe(400);
    const after = await call<{ data: Run[] }>(api.base, 'GET', '/v1/runs?limit=100');
    expect(after.body.data.length).toBe(before.body.data.length);

    // Created: the runs are queued (no worker yet), in the order given.
    const created = await call<CreateBatchResponse>(api.base, 'POST', '/v1/batches', {
      runs: Array.from({ length: 25 }, (_, i) => run(`task ${i}`)),
      metadata: { owner: 'nightly' },
    });
    expect(created.status).toBe(202);
    const { id, runIds } = created.body;
    expect(id).toMatch(/^bat_[0-9a-z]{26}$/);
    expect(runIds).toHaveLength(25);
    const queued = await call<Batch>(api.base, 'GET', `/v1/batches/${id}?limit=10`);
    expect(queued.body).toMatchObject({ id, status: 'running', total: 25, counts: { queued: 25 } });
    expect(queued.body.metadata).toEqual({ owner: 'nightly' });
    expect(queued.body.runs.map((r) => r.id)).toEqual(runIds.slice(0, 10));
    const second = await call<Batch>(
      api.base,
      'GET',
      `/v1/batches/${id}?limit=10&cursor=${queued.body.nextCursor}`,
    );
    expect(second.body.runs.map((r) => r.id)).toEqual(runIds.slice(10, 20));
    const last = await call<Batch>(
      api.base,
      'GET',
      `/v1/batches/${id}?limit=10&cursor=${second.body.nextCursor}`,
    );
    expect(last.body.runs).toHaveLength(5);
    expect(last.body.nextCursor).toBeNull();
    expect((await call<Run>(api.base, 'GET', `/v1/runs/${runIds[3]}`)).body.batchId).toBe(id);

    // Another tenant sees nothing of it.
    for (const [method, path] of [
      ['GET', `/v1/batches/${id}`],
      ['POST', `/v1/batches/${id}/cancel`],
    ] as const) {
      const other = await call<{ error: { code: string } }>(api.base, method, path, undefined, BETA);
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('ERR_BATCH_NOT_FOUND');
    }
    expect((await call(api.base, 'GET', '/v1/batches/not-a-batch')).status).toBe(404);
    expect((await call(api.base, 'GET', `/v1/batches/${id}?cursor=-1`)).status).toBe(400);

    // A worker runs them all: the batch completes, told once, on the run that ended last.
    await startWorker(shared, 'worker', 8, ENV);
    const done = await eventually(
      async () => (await call<Batch>(api.base, 'GET', `/v1/batches/${id}`)).body,
      (batch) => batch.status === 'completed',
    );
    expect(done.counts).toEqual({ completed: 25 });
    expect(done.completedAt).toBeDefined();
    const logs = await Promise.all(runIds.map((runId) => eventsOf(api.base, runId)));
    const told = logs.filter((events) => events.some((e) => e.type === 'batch.completed'));
    expect(told).toHaveLength(1);
    const types = (told[0] as RunEvent[]).map((e) => e.type);
    expect(types.slice(-2)).toEqual(['batch.completed', 'run.completed']);
    expect((told[0] as RunEvent[]).find((e) => e.type === 'batch.completed')?.data).toEqual({
      batchId: id,
      total: 25,
    });
    const delivered = await eventually(
      async () => hook.received.filter((payload) => payload.type === 'batch.completed'),
      (list) => list.length > 0,
    );
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.data).toEqual({ batchId: id, total: 25 });
  });

  it("cancels a batch's live runs, leaving those that ended, and completes it", async () => {
    const shared = await deployment('batches-cancel');
    const api = await startApi(shared, API_KEYS, 'api', ENV);
    // One run asks a question and waits; the others end at once.
    const created = await call<CreateBatchResponse>(api.base, 'POST', '/v1/batches', {
      runs: [
        {
          ...run('asks', [
            { toolCalls: [{ name: 'clarify', arguments: { question: 'Which one?' } }] },
            { content: 'ok' },
          ]),
          toolsets: ['interaction'],
        },
        run('quick one'),
        run('quick two'),
      ],
    });
    expect(created.status).toBe(202);
    const { id } = created.body;
    await startWorker(shared, 'worker', 4, ENV);
    await eventually(
      async () => (await call<Batch>(api.base, 'GET', `/v1/batches/${id}`)).body.counts,
      (counts) => counts.completed === 2 && counts.waiting_for_input === 1,
    );
    const cancelled = await call<{ id: string; cancelled: number }>(
      api.base,
      'POST',
      `/v1/batches/${id}/cancel`,
    );
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toEqual({ id, cancelled: 1 });
    const batch = await eventually(
      async () => (await call<Batch>(api.base, 'GET', `/v1/batches/${id}`)).body,
      (value) => value.status === 'completed',
    );
    expect(batch.counts).toEqual({ completed: 2, cancelled: 1 });
    // Cancelling again finds nothing live.
    expect((await call(api.base, 'POST', `/v1/batches/${id}/cancel`)).body).toEqual({ id, cancelled: 0 });
  });

  it('refuses more runs than a batch holds, naming the field, and stays healthy', async () => {
    const shared = await deployment('batches-limits');
    const api = await startApi(shared, API_KEYS, 'api', ENV);
    const tooMany = await call<{ error: { code: string; message: string } }>(
      api.base,
      'POST',
      '/v1/batches',
      {
        runs: Array.from({ length: 1_001 }, (_, i) => run(`t${i}`)),
      },
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.message).toContain('runs');
    const unknown = await call(api.base, 'POST', '/v1/batches', { runs: [run('a')], extra: true });
    expect(unknown.status).toBe(400);
    expect((await call(api.base, 'GET', '/healthz')).status).toBe(200);
  });

  it('tether batch submits a JSON Lines file as one batch, follows it with --wait, and shows and cancels one', async () => {
    const shared = await deployment('batches-cli');
    const api = await startApi(shared, API_KEYS, 'api', ENV);
    await startWorker(shared, 'worker', 4, ENV);
    const dir = await mkdtemp(join(tmpdir(), 'tether-batch-cli-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const env = { TETHER_URL: api.base, TETHER_API_KEY: ACME_KEY, NO_COLOR: '1' };
    const file = join(dir, 'runs.jsonl');
    await writeFile(file, `${JSON.stringify(run('first'))}\n\n${JSON.stringify(run('second'))}\n`);
    const waited = await tether(['batch', file, '--wait', '--json'], env);
    expect(waited.stderr).toBe('');
    expect(waited.code).toBe(0);
    const batch = JSON.parse(waited.stdout) as Batch;
    expect(batch).toMatchObject({ status: 'completed', total: 2, counts: { completed: 2 } });
    const shown = await tether(['batch', '--show', batch.id], env);
    expect(shown.stdout).toBe(`${batch.id}: completed, 2 runs (2 completed)\n`);
    expect((await tether(['batch', '--cancel', batch.id], env)).stdout).toBe(
      `Cancelled 0 live runs of ${batch.id}.\n`,
    );
    // A bad line is named, and nothing is sent.
    await writeFile(file, `${JSON.stringify(run('ok'))}\nnot json\n`);
    const bad = await tether(['batch', file], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('line 2 is not JSON');
    expect((await tether(['batch', '--show', 'bat_00000000000000000000000000'], env)).code).not.toBe(0);
  });
});
