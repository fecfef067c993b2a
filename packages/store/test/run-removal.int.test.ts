import { newChildRunId, newId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { QueueError } from '../src/index.js';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { RunService, RunStore } from '../src/runs/index.js';

/**
 * `RunService.delete` against real scripts (on a Redis Cluster too: a crew
 * tree's keys are in its root's hash slot, the tenant's index in the
 * tenant's): every key of an ended run and its crew children goes, with its
 * entry in the tenant's list; an active run or child, another tenant's run
 * and a crew child on its own are refused.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'run-removal', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('removal'));
const store = new RunStore({ redis, keys });
const service = new RunService({ redis, keys, store });
afterAll(() => service.close());
const TOKEN = 'w1:t1';
const body = { input: 'hi', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };

/** Every key the run may own, and how many of them exist. */
async function keysLeft(runId: string): Promise<number> {
  const run = keys.run(runId);
  const all = [
    run.record,
    run.checkpoint,
    run.spec,
    run.metadata,
    run.events,
    run.turn,
    run.children,
    run.waitpoint,
    ...Object.values(run.legacy).filter((key) => typeof key === 'string'),
  ];
  let found = 0;
  for (const key of all) found += await redis.exists(key);
  return found;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof QueueError) return error.code;
    throw error;
  }
  return 'resolved';
}

const listed = async (tenant: string) => (await store.list(tenant, { limit: 100 })).runs.map((r) => r.id);

describe('RunService.delete', () => {
  it('refuses an active run (ERR_RUN_ACTIVE) and another tenant, then removes every key once it has ended', async () => {
    const { run } = await service.submit('acme', { ...body, metadata: { team: 'a' } });
    expect(await codeOf(service.delete('acme', run.id))).toBe('ERR_RUN_ACTIVE');
    expect(await codeOf(service.delete('beta', run.id))).toBe('ERR_RUN_NOT_FOUND');
    // A question asked and answered: its waitpoint is the run's too.
    await store.claim(run.id, TOKEN, 1, 'w1');
    const requestId = newId('clr');
    await store.suspend(run.id, TOKEN, {
      requestId,
      question: 'Which?',
      choices: [],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(await codeOf(service.delete('acme', run.id))).toBe('ERR_RUN_ACTIVE');
    expect(await store.answer(run.id, requestId, 'this')).toBe('ok');
    await store.claim(run.id, TOKEN, 2, 'w1');
    expect(await store.finalize(run.id, { status: 'failed', error: { code: 'E', message: 'm' } })).toBe(true);
    expect(await keysLeft(run.id)).toBeGreaterThan(3);
    expect(await listed('acme')).toContain(run.id);

    const deleted = await service.delete('acme', run.id);
    expect(deleted.id).toBe(run.id);
    expect(await keysLeft(run.id)).toBe(0);
    expect(await store.get(run.id)).toBeUndefined();
    expect(await store.readEvents(run.id)).toEqual([]);
    expect(await listed('acme')).not.toContain(run.id);
    expect(await codeOf(service.delete('acme', run.id))).toBe('ERR_RUN_NOT_FOUND');
  });

  it("takes a crew parent's children with it, and refuses while one is active or on a child alone", async () => {
    const root = newId('run');
    await store.create({
      id: root,
      tenant: 'acme',
      spec: { input: 'lead' },
      createdAtMs: Date.now(),
      queue: '',
    });
    await store.claim(root, TOKEN, 1, 'w1');
    const children = [0, 1].map((index) => ({ id: newChildRunId(root), index, goal: `goal ${index}` }));
    for (const child of children) {
      await store.create({
        id: child.id,
        tenant: 'acme',
        spec: { input: child.goal },
        createdAtMs: Date.now(),
        queue: '',
        crew: {
          parentRunId: root,
          rootRunId: root,
          depth: 1,
          call: 'call_1',
          index: child.index,
          deadlineMs: 0,
        },
      });
    }
    await store.delegate(root, TOKEN, { call: 'call_1', deadlineMs: 0, maxChildren: 50, children });
    const [first, second] = children.map((child) => child.id) as [string, string];
    await store.finalize(first, { status: 'completed', output: 'done' }, '', [], [], root);
    // The parent ends (cancelled); its second child still runs.
    await store.claim(second, 'w2:t2', 1, 'w2', root);
    await store.finalize(root, { status: 'cancelled' });
    expect(await codeOf(service.delete('acme', second))).toBe('ERR_RUN_CREW_CHILD');
    expect(await codeOf(service.delete('acme', root))).toBe('ERR_RUN_ACTIVE');
    expect(await keysLeft(root)).toBeGreaterThan(0);

    await store.finalize(second, { status: 'cancelled' }, '', [], [], root);
    await service.delete('acme', root);
    for (const id of [root, first, second]) expect(await keysLeft(id)).toBe(0);
    const left = await listed('acme');
    for (const id of [root, first, second]) expect(left).not.toContain(id);
  });
});
