import { uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { holdLease, releaseLease } from '../../src/leases/commands/scripts.js';
import { Lease } from '../../src/leases/index.js';
import { createKeys } from '../../src/redis/index.js';
import { useRedis } from './fixture.js';

const redis = useRedis();
const leaseKey = () => createKeys(uniquePrefix('lease')).queueMetricsLease;
const hold = (key: string, holder: string, ttlMs = 10_000) =>
  holdLease.run(redis, { keys: { lease: key }, args: { holder, ttlMs } });
const release = (key: string, holder: string) =>
  releaseLease.run(redis, { keys: { lease: key }, args: { holder } });

describe('holdLease', () => {
  it('takes a free lease for its ttl', async () => {
    const key = leaseKey();
    expect(await hold(key, 'p1', 5_000)).toBe(1);
    expect(await redis.get(key)).toBe('p1');
    expect(await redis.pttl(key)).toBeGreaterThan(4_000);
  });

  it('renews the lease of its holder', async () => {
    const key = leaseKey();
    await hold(key, 'p1', 1_000);
    expect(await hold(key, 'p1', 60_000)).toBe(1);
    expect(await redis.pttl(key)).toBeGreaterThan(50_000);
  });

  it("refuses another's lease and leaves it as it was", async () => {
    const key = leaseKey();
    await hold(key, 'p1', 5_000);
    expect(await hold(key, 'p2', 60_000)).toBe(0);
    expect(await redis.get(key)).toBe('p1');
    expect(await redis.pttl(key)).toBeLessThanOrEqual(5_000);
  });
});

describe('releaseLease', () => {
  it('deletes the lease of its holder', async () => {
    const key = leaseKey();
    await hold(key, 'p1');
    expect(await release(key, 'p1')).toBe(1);
    expect(await redis.exists(key)).toBe(0);
  });

  it("keeps another's lease, and answers 0 for none", async () => {
    const key = leaseKey();
    await hold(key, 'p1');
    expect(await release(key, 'p2')).toBe(0);
    expect(await redis.get(key)).toBe('p1');
    expect(await release(leaseKey(), 'p1')).toBe(0);
  });
});

describe('Lease', () => {
  it('is held by one process at a time, and passes to another when its holder stops', async () => {
    const key = leaseKey();
    const a = new Lease({ redis, key, holder: 'a', ttlMs: 10_000 });
    const b = new Lease({ redis, key, holder: 'b', ttlMs: 10_000 });
    expect(await a.look()).toBe(true);
    expect(await b.look()).toBe(false);
    expect([a.held, b.held]).toEqual([true, false]);
    await a.stop();
    expect(a.held).toBe(false);
    expect(await a.look()).toBe(false);
    expect(await b.look()).toBe(true);
    await b.stop();
    expect(await redis.exists(key)).toBe(0);
  });

  it('passes to another process once a dead holder lets it expire', async () => {
    const key = leaseKey();
    const dead = new Lease({ redis, key, holder: 'dead', ttlMs: 150 });
    const alive = new Lease({ redis, key, holder: 'alive', ttlMs: 150 });
    expect(await dead.look()).toBe(true);
    alive.start();
    await expect.poll(() => alive.held, { timeout: 2_000, interval: 20 }).toBe(true);
    await alive.stop();
  });

  it('counts itself no holder while Redis does not answer', async () => {
    const errors: unknown[] = [];
    // Nothing listens on port 1: every command fails at once.
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    const lease = new Lease({ redis: down, key: leaseKey(), holder: 'x', onError: (e) => errors.push(e) });
    expect(await lease.look()).toBe(false);
    expect(errors).toHaveLength(1);
    down.disconnect();
  });
});
