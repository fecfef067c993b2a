import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, isCluster } from '../src/redis/index.js';
import { RunService, RunStore } from '../src/runs/index.js';

// The test Redis: one server, or in the `cluster` project a Redis Cluster.
const redis = createRedisConnection({
  ...testRedisTarget(),
  name: 'test-store',
  mode: 'wait',
  onError: () => {},
});
afterAll(() => redis.quit());

function deployment() {
  const keys = createKeys(uniquePrefix('store'));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  return { keys, store, service };
}

const body = { input: 'hi', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };

describe('RunStore onEnded', () => {
  it('is told once of each run the store ends, with its tenant and status', async () => {
    const keys = createKeys(uniquePrefix('store'));
    const ended: unknown[] = [];
    const store = new RunStore({ redis, keys, onEnded: (run) => ended.push(run) });
    const service = new RunService({ redis, keys, store });
    const { run } = await service.submit('acme', body);
    const { run: other } = await service.submit('beta', body);
    expect(await store.finalize(run.id, { status: 'completed', output: 'x' })).toBe(true);
    expect(await store.finalize(run.id, { status: 'failed', error: { code: 'E', message: 'm' } })).toBe(
      false,
    );
    await service.cancel('beta', other.id);
    expect(ended).toEqual([
      { runId: run.id, tenant: 'acme', status: 'completed' },
      { runId: other.id, tenant: 'beta', status: 'cancelled' },
    ]);
    await service.close();
  });
});

describe('RunService.submit', () => {
  it('writes the runs submitted in one turn together: every one created, indexed and queued once', async () => {
    const { store, service } = deployment();
    const submitted = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        service.submit(i % 2 ? 'acme' : 'beta', { ...body, input: `run ${i}` }),
      ),
    );
    const ids = submitted.map(({ run }) => run.id);
    expect(new Set(ids).size).toBe(40);
    const records = await store.getMany(ids);
    expect(records.map((r) => r?.status)).toEqual(Array(40).fill('queued'));
    expect(records.map((r) => r?.spec)).toEqual(Array(40).fill(undefined));
    expect((await store.get(ids[7] as string))?.spec).toEqual({ ...body, input: 'run 7' });
    expect((await store.list('acme', { limit: 100 })).runs).toHaveLength(20);
    const counts = await service.jobCounts('wait');
    expect(counts.wait).toBe(40);
    // A job carries its run's id and tenant only: the run's body stays in its record.
    expect((await service.getJob(ids[3] as string))?.data).toEqual({ runId: ids[3], tenant: 'acme' });
    await service.close();
  });

  it('marks the runs failed and rejects every submission when their jobs cannot be queued', async () => {
    const keys = createKeys(uniquePrefix('store'));
    const store = new RunStore({ redis, keys });
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on('error', () => {});
    const service = new RunService({ redis, queueConnection: down, keys, store });
    service.onQueueError(() => {});
    const results = await Promise.allSettled([service.submit('acme', body), service.submit('acme', body)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const listed = (await store.list('acme', { limit: 10 })).runs;
    expect(listed).toHaveLength(2);
    for (const run of listed) {
      expect(run.status).toBe('failed');
      expect(run.error?.code).toBe('ERR_QUEUE_ENQUEUE');
    }
    down.disconnect();
  });
});

describe('RunStore', () => {
  it('creates a run (record, spec, run.queued, index entry) even after Redis forgot its scripts', async () => {
    const { store, service } = deployment();
    // Every master's, as after a failover or a restart.
    for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) await node.script('FLUSH');
    const { run } = await service.submit('acme', body);
    await service.close();
    expect(await store.get(run.id)).toMatchObject({
      id: run.id,
      tenant: 'acme',
      status: 'queued',
      spec: body,
    });
    expect((await store.readEvents(run.id)).map((e) => e.type)).toEqual(['run.queued']);
    expect((await store.list('acme', { limit: 10 })).runs.map((r) => r.id)).toEqual([run.id]);
  });

  it('reads events after any id a stream can hold, the last one included (nothing follows it)', async () => {
    const { store, service } = deployment();
    const { run } = await service.submit('acme', body);
    await service.close();
    const [queued] = await store.readEvents(run.id);
    expect(await store.readEvents(run.id, '0-0')).toEqual([queued]);
    expect(await store.readEvents(run.id, queued?.id)).toEqual([]);
    expect(await store.readEvents(run.id, '18446744073709551615-0')).toEqual([]);
    expect(await store.readEvents(run.id, '18446744073709551615-18446744073709551615')).toEqual([]);
  });

  it('refuses to create a run whose id exists, and lists a tenant only its own runs', async () => {
    const { keys, store, service } = deployment();
    const { run } = await service.submit('acme', body);
    await service.close();
    const again = { id: run.id, tenant: 'beta', spec: body, createdAtMs: Date.now() };
    expect(await store.create(again)).toBe(false);
    expect((await store.get(run.id))?.tenant).toBe('acme');
    // beta's index got the id, but the run is not beta's: it is not listed, and leaves the index.
    expect((await store.list('beta', { limit: 10 })).runs).toEqual([]);
    expect(await redis.zcard(keys.tenantRuns('beta'))).toBe(0);
    expect((await store.list('acme', { limit: 10 })).runs.map((r) => r.id)).toEqual([run.id]);
  });

  it('claims a run once per attempt: run.started the first time, attempt.started every time, the highest attempt kept', async () => {
    const { store, service } = deployment();
    const { run } = await service.submit('acme', body);
    await service.close();
    const first = await store.claim(run.id, 'w1:t1', 1, 'w1');
    expect(first).toMatchObject({ status: 'ok', spec: body, checkpoint: undefined });
    const started = (await store.get(run.id))?.startedAt;
    expect(await store.claim(run.id, 'w2:t2', 3, 'w2')).toMatchObject({ status: 'ok' });
    expect(await store.claim(run.id, 'w3:t3', 2, 'w3')).toMatchObject({ status: 'ok' });
    const record = await store.get(run.id);
    expect(record).toMatchObject({ status: 'running', attempts: 3, startedAt: started });
    const events = await store.readEvents(run.id);
    expect(events.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'attempt.started',
      'attempt.started',
      'attempt.started',
    ]);
    expect(events[1]?.data).toEqual({ attempt: 1, workerId: 'w1' });
    // The latest claim owns the run: only its token may end it.
    expect(await store.finalize(run.id, { status: 'completed', output: 'x' }, 'w2:t2')).toBe(false);
    expect(
      await store.finalize(
        run.id,
        {
          status: 'completed',
          output: 'done',
          checkpoint: {
            json: '{"version":1}',
            todos: [{ id: '1', content: 'a', status: 'completed' }],
            step: 4,
          },
        },
        'w3:t3',
      ),
    ).toBe(true);
    expect(await store.get(run.id)).toMatchObject({
      status: 'completed',
      output: 'done',
      todos: [{ id: '1', content: 'a', status: 'completed' }],
    });
    expect(await store.loadCheckpoint(run.id)).toBe('{"version":1}');
    expect(await store.claim(run.id, 'w4:t4', 4, 'w4')).toEqual({ status: 'completed' });
  });
});
