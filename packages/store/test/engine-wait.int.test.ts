import { newChildRunId, newId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import type { Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { type NewRun, type RunJobData, RunService, RunStore, type WaitOpen } from '../src/runs/index.js';

/**
 * A crew parent's wait for its children is one step of the engine: the children created, the
 * delegation recorded, their jobs queued. Refused (a cancel asked for, the crew's life limit), the
 * children it created end in the same step, before any job of theirs exists; when another worker
 * owns the run, they are left to it (it takes the step again with the same ids).
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'engine-wait', onError: () => {} });
const keys = createKeys(uniquePrefix('engine-wait'));
const store = new RunStore({ redis, keys });
const service = new RunService({ redis, keys, store });
afterAll(async () => {
  await service.close();
  await redis.quit();
});
const TOKEN = 'w1:t1';

/** A running parent owned by TOKEN, and the wait for `count` children it asks for. */
async function delegating(count: number, maxChildren = 50): Promise<{ root: string; open: WaitOpen }> {
  const root = newId('run');
  await store.create({ id: root, tenant: 't', spec: { input: 'lead' }, createdAtMs: Date.now() });
  await store.claim(root, TOKEN, 1, 'w1');
  const deadlineMs = Date.now() + 60_000;
  const children: NewRun[] = Array.from({ length: count }, (_, index) => ({
    id: newChildRunId(root),
    tenant: 't',
    queue: keys.queuePrefix,
    spec: { input: `goal ${index}` },
    createdAtMs: Date.now(),
    crew: { parentRunId: root, rootRunId: root, depth: 1, call: 'call_1', index, deadlineMs },
  }));
  const delegation = {
    call: 'call_1',
    deadlineMs,
    maxChildren,
    children: children.map((child, index) => ({ id: child.id, index, goal: child.spec.input })),
  };
  return { root, open: { on: 'children', delegation, children } };
}

/** The attempt of `root` as the engine takes it; a refused wait never touches the job. */
const attempt = (runId: string, fence = TOKEN) => ({
  runId,
  fence,
  token: undefined,
  job: {} as Job<RunJobData>,
});
const nothingRecorded = async () => {
  throw new Error('a refused wait records nothing');
};

describe('RunEngine.wait for children', () => {
  it('ends the children it created when a cancel was asked for, and queues none', async () => {
    const { root, open } = await delegating(2);
    await store.requestCancel(root);
    const refusal = await service.engine.wait(attempt(root), open, [], nothingRecorded);
    expect(refusal.refused).toBe('cancel');
    const ids = open.on === 'children' ? open.children.map((child) => child.id) : [];
    expect((await store.getMany(ids)).map((child) => child?.status)).toEqual(['cancelled', 'cancelled']);
    for (const id of ids) {
      expect((await store.readEvents(id)).at(-1)).toMatchObject({
        type: 'run.cancelled',
        data: { reason: 'its parent run could not delegate' },
      });
    }
    expect(await Promise.all(ids.map((id) => service.getJob(id)))).toEqual([undefined, undefined]);
    expect((await store.get(root))?.status).toBe('running');
  });

  it("ends them past the crew's life limit", async () => {
    const { open, root } = await delegating(3, 2);
    const refusal = await service.engine.wait(attempt(root), open, [], nothingRecorded);
    expect(refusal.refused).toBe('max_children');
    const ids = open.on === 'children' ? open.children.map((child) => child.id) : [];
    expect((await store.getMany(ids)).map((child) => child?.status)).toEqual([
      'cancelled',
      'cancelled',
      'cancelled',
    ]);
  });

  it('leaves them to the worker that owns the run now', async () => {
    const { open, root } = await delegating(1);
    const refusal = await service.engine.wait(attempt(root, 'w9:t9'), open, [], nothingRecorded);
    expect(refusal.refused).toBe('not_owner');
    const ids = open.on === 'children' ? open.children.map((child) => child.id) : [];
    expect((await store.getMany(ids)).map((child) => child?.status)).toEqual(['queued']);
  });
});
