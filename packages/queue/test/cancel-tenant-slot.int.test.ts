import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, RunService, RunStore } from '../src/index.js';

/**
 * A run cancelled by the API before any attempt took it up (queued, waiting in its tenant's line
 * for a slot, or handed one it had not taken up yet) gives its place back: the slot handed to it
 * would otherwise stay reserved until its reserve ran out (four leases), one slot fewer for the
 * tenant meanwhile.
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
});
