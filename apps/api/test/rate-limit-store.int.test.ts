import { createKeys, createRedisConnection, type RedisClient, type TetherKeys } from '@tether/store/redis';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { SharedCounters, sharedCounterStore } from '../src/plugins/rate-limit-store.js';

/** Tests that use the real clock count in hour-long windows, so a window rarely ends mid-test. */
const HOUR = 3_600_000;
// The test Redis: one server, or in the `cluster` project a Redis Cluster.
const redis = createRedisConnection({
  ...testRedisTarget(),
  name: 'test-rlc',
  mode: 'wait',
  onError: () => {},
});
afterAll(() => redis.quit());

function counters(keys: TetherKeys, syncIntervalMs = 10_000) {
  const errors: unknown[] = [];
  const shared = new SharedCounters({ redis, keys, syncIntervalMs, onError: (e) => errors.push(e) });
  return { shared, errors };
}

/** A deployment's key names, and the name of its counter of `key` in the hour-long window of now. */
function deployment() {
  const keys = createKeys(uniquePrefix('rlc'));
  return { keys, counter: (key: string) => keys.rateLimit(key, HOUR, Math.floor(Date.now() / HOUR)) };
}

describe('SharedCounters', () => {
  it('counts at once, per key and window (windows aligned to the epoch)', async () => {
    const { keys } = deployment();
    const { shared } = counters(keys);
    const now = 60_000 * 28_333_333 + 12_345;
    expect(shared.increment('tenant:a', 60_000, now)).toEqual({ current: 1, ttl: 60_000 - 12_345 });
    expect(shared.increment('tenant:a', 60_000, now).current).toBe(2);
    expect(shared.increment('tenant:b', 60_000, now).current).toBe(1);
    expect(shared.peek('tenant:a', 60_000, now).current).toBe(2);
    // The next window starts from zero.
    expect(shared.increment('tenant:a', 60_000, now + 60_000).current).toBe(1);
    await shared.close();
  });

  it('two instances learn each other’s counts at their next sync; Redis holds the sum, expiring', async () => {
    const { keys, counter } = deployment();
    const a = counters(keys).shared;
    const b = counters(keys).shared;
    for (let i = 0; i < 3; i++) a.increment('tenant:t', HOUR);
    for (let i = 0; i < 4; i++) b.increment('tenant:t', HOUR);
    await a.sync();
    await b.sync();
    expect(b.peek('tenant:t', HOUR).current).toBe(7);
    // a learns b's four with its next request's sync.
    expect(a.increment('tenant:t', HOUR).current).toBe(4);
    await a.sync();
    expect(a.peek('tenant:t', HOUR).current).toBe(8);
    expect(await redis.get(counter('tenant:t'))).toBe('8');
    const ttl = await redis.pttl(counter('tenant:t'));
    expect(ttl).toBeGreaterThan(10_000);
    expect(ttl).toBeLessThanOrEqual(HOUR + 10_000);
    await a.close();
    await b.close();
  });

  it('syncs by itself after the interval, and sends what is left on close', async () => {
    const { keys, counter } = deployment();
    const { shared } = counters(keys, 20);
    shared.increment('tenant:x', HOUR);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await redis.get(counter('tenant:x'))).toBe('1');
    shared.increment('tenant:y', HOUR);
    await shared.close();
    expect(await redis.get(counter('tenant:y'))).toBe('1');
  });

  it('keeps counting when Redis is unreachable, reports it, and loses no count', async () => {
    const { keys } = deployment();
    const down = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    const errors: unknown[] = [];
    const shared = new SharedCounters({
      redis: down,
      keys,
      syncIntervalMs: 10_000,
      onError: (e) => errors.push(e),
    });
    shared.increment('tenant:z', 60_000);
    shared.increment('tenant:z', 60_000);
    await expect(shared.sync()).rejects.toThrow();
    // Nothing was lost: the two are still counted, and go with the next sync.
    expect(shared.increment('tenant:z', 60_000).current).toBe(3);
    down.disconnect();
  });

  it('retries a failed sync every interval, reporting the failure once, until Redis answers', async () => {
    const { keys, counter } = deployment();
    // Connected, then closed: commands fail at once until it connects again.
    const late: RedisClient = createRedisConnection({
      ...testRedisTarget(),
      name: 'test-rlc-late',
      mode: 'fail-fast',
      onError: () => {},
    });
    await new Promise((resolve) => late.once('ready', resolve));
    late.disconnect();
    const errors: unknown[] = [];
    const shared = new SharedCounters({
      redis: late,
      keys,
      syncIntervalMs: 20,
      onError: (e) => errors.push(e),
    });
    shared.increment('tenant:r', HOUR);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(errors).toHaveLength(1);
    // Awaited by its `ready`: a Cluster client's connect() never settles when its first try fails.
    const back = new Promise((resolve) => late.once('ready', resolve));
    late.connect().catch(() => {});
    await back;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await redis.get(counter('tenant:r'))).toBe('1');
    await shared.close();
    late.disconnect();
  });

  it('is a @fastify/rate-limit store; a route with its own limit counts under its own key', () => {
    const { shared } = counters(deployment().keys);
    const store = sharedCounterStore(shared);
    const route = store.child({ routeInfo: { method: 'POST', url: '/v1/runs' } });
    const results: number[] = [];
    store.incr('tenant:a', (_e, r) => results.push(r.current), 60_000, 10);
    store.incr('tenant:a', (_e, r) => results.push(r.current), 60_000, 10);
    route.incr('tenant:a', (_e, r) => results.push(r.current), 60_000, 10);
    route.read('tenant:a', (_e, r) => results.push(r.current), 60_000, 10);
    expect(results).toEqual([1, 2, 1, 1]);
    void shared.close();
  });

  it('refuses a sync interval that is not a positive integer', () => {
    expect(
      () => new SharedCounters({ redis, keys: createKeys(), syncIntervalMs: 0, onError: () => {} }),
    ).toThrow(/syncIntervalMs/);
  });
});
