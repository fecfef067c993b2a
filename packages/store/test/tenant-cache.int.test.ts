import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisConnection, TenantCache } from '../src/redis/index.js';

/**
 * A process's copies per tenant (`TenantCache`) with a real subscriber connection: a copy lasts
 * until a change is published, one read serves every caller at a time, and a read that began
 * before a change is not kept (it may hold what the change replaced).
 */
const target = testRedisTarget();
const redis = createRedisConnection({ ...target, name: 'tenant-cache', onError: () => {} });
const subscriber = createRedisConnection({
  ...target,
  name: 'tenant-cache:sub',
  subscriber: true,
  onError: () => {},
});
const channel = `${uniquePrefix('tenant-cache')}:changed`;
afterAll(async () => {
  await Promise.all([redis.quit(), subscriber.quit()]);
});

/** A cache over a counter per tenant, whose reads are counted and may be held back. */
function counted() {
  const values = new Map<string, number>();
  let reads = 0;
  let gate: Promise<void> | undefined;
  const cache = new TenantCache<number>({
    load: async (tenant) => {
      reads++;
      const value = values.get(tenant) ?? 0;
      await gate;
      return value;
    },
    ttlMs: 60_000,
    channel,
    subscriber,
  });
  return {
    cache,
    values,
    reads: () => reads,
    hold: () => {
      let open = () => {};
      gate = new Promise((resolve) => {
        open = resolve;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
  };
}

/** With a copy of `tenant` kept, publishes a change of it and waits until the cache reads it again. */
async function change(c: ReturnType<typeof counted>, tenant: string) {
  await c.cache.get(tenant);
  await redis.publish(channel, tenant);
  const before = c.reads();
  await expect
    .poll(async () => {
      await c.cache.get(tenant);
      return c.reads();
    })
    .toBeGreaterThan(before);
}

describe('TenantCache', () => {
  it('keeps a copy per tenant until a change is published, one read serving callers at a time', async () => {
    const c = counted();
    await c.cache.listen();
    c.values.set('acme', 1);
    const release = c.hold();
    const both = Promise.all([c.cache.get('acme'), c.cache.get('acme')]);
    release();
    expect(await both).toEqual([1, 1]);
    expect(await c.cache.get('acme')).toBe(1);
    expect(c.reads()).toBe(1);
    c.values.set('acme', 2);
    // Another tenant's change leaves this copy alone.
    await change(c, 'beta');
    expect(c.reads()).toBe(3);
    expect(await c.cache.get('acme')).toBe(1);
    expect(c.reads()).toBe(3);
    await change(c, 'acme');
    expect(await c.cache.get('acme')).toBe(2);
    c.cache.close();
  });

  it('does not keep a read that began before a change was heard', async () => {
    const c = counted();
    await c.cache.listen();
    c.values.set('acme', 1);
    const release = c.hold();
    const stale = c.cache.get('acme');
    // The change lands while the read is held: the value it read is the one replaced.
    c.values.set('acme', 2);
    c.cache.forget('acme');
    release();
    expect(await stale).toBe(1);
    expect(await c.cache.get('acme')).toBe(2);
    expect(c.reads()).toBe(2);
    c.cache.close();
  });
});
