import { newChildRunId, newId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { RunService, RunStore } from '../src/runs/index.js';

/**
 * A run cancelled by the API before any attempt took it up (queued, waiting in its tenant's line
 * for a slot, or handed one it had not taken up yet) gives its place back: the slot handed to it
 * would otherwise stay reserved until its reserve ran out (four leases), one slot fewer for the
 * tenant meanwhile. So does a crew child its parent times out (it ends failed, the same way).
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'cancel-slot', onError: () => {} });
const services: RunService[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.close()));
  await redis.quit();
});

const body = { input: 'hi', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };

describe('RunService.cancel and the tenant slots', () => {
  it("frees a slot handed to the cancelled run, takes a waiting one out of the line, and leaves an attempt's slot", async () => {
    const keys = createKeys(uniquePrefix('cancel-slot'));
    const store = new RunStore({ redis, keys });
    const service = new RunService({ redis, keys, store });
    services.push(service);
    const [running, handed, waiting, behind] = await Promise.all(
      [0, 1, 2, 3].map(async () => (await service.submit('acme', body)).run.id),
    );
    const slots = keys.tenantSlots('acme');
    const lease = Date.now() + 60_000;
    await redis.zadd(slots.running, lease, running as string, lease, handed as string);
    await redis.hset(slots.holders, running as string, 'w1:t1', handed as string, '');
    await redis.zadd(slots.parked, 1, waiting as string, 2, behind as string);

    expect(await service.cancel('acme', handed as string)).toBe('queued');
    expect(await service.cancel('acme', waiting as string)).toBe('queued');

    expect(await redis.zrange(slots.running, 0, -1)).toEqual([running]);
    expect(await redis.hgetall(slots.holders)).toEqual({ [running as string]: 'w1:t1' });
    expect(await redis.zrange(slots.parked, 0, -1)).toEqual([behind]);
    expect((await store.get(handed as string))?.status).toBe('cancelled');
    expect((await store.get(waiting as string))?.status).toBe('cancelled');
  });

  it("a crew child timed out by its parent leaves the line, and frees a slot handed to it; an attempt's slot stays", async () => {
    const keys = createKeys(uniquePrefix('timeout-slot'));
    const store = new RunStore({ redis, keys });
    const service = new RunService({ redis, keys, store });
    services.push(service);
    const root = newId('run');
    await store.create({ id: root, tenant: 'acme', spec: { input: 'lead' }, createdAtMs: Date.now() });
    await store.claim(root, 'w1:t1', 1, 'w1');
    const children = [0, 1, 2, 3].map((index) => ({ id: newChildRunId(root), index, goal: `goal ${index}` }));
    for (const child of children) {
      await store.create({
        id: child.id,
        tenant: 'acme',
        spec: { input: child.goal },
        createdAtMs: Date.now(),
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
    await store.delegate(root, 'w1:t1', { call: 'call_1', deadlineMs: 0, maxChildren: 50, children });
    const [running, handed, waiting, behind] = children.map((child) => child.id) as [
      string,
      string,
      string,
      string,
    ];
    const slots = keys.tenantSlots('acme');
    const lease = Date.now() + 60_000;
    await redis.zadd(slots.running, lease, running, lease, handed);
    await redis.hset(slots.holders, running, 'w2:t2', handed, '');
    await redis.zadd(slots.parked, 1, waiting, 2, behind);

    for (const child of [handed, waiting, running]) await service.engine.timeOutChild(child, root, 1_000);

    expect(await redis.zrange(slots.running, 0, -1)).toEqual([running]);
    expect(await redis.hgetall(slots.holders)).toEqual({ [running]: 'w2:t2' });
    expect(await redis.zrange(slots.parked, 0, -1)).toEqual([behind]);
    for (const child of [handed, waiting, running]) expect((await store.get(child))?.status).toBe('failed');
  });
});
