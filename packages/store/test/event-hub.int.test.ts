import type { RunEvent } from '@tether/protocol';
import { type OwnRedis, startOwnRedis, uniquePrefix } from '@tether/testing';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { EventHub } from '../src/runs/index.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function connect(redis: OwnRedis, mode: 'fail-fast' | 'wait'): Promise<Redis> {
  const connection = createRedisConnection({ url: redis.url, name: 'test-hub', mode, onError: () => {} });
  cleanups.push(async () => connection.disconnect());
  if (connection.status !== 'ready') await next(connection, 'ready');
  return connection;
}

/**
 * The next `name` event of a connection. Not `events.once`: that rejects on an `error` event, and a
 * connection reports each failed reconnect attempt as one while Redis is down.
 */
function next(connection: Redis, name: 'ready' | 'close'): Promise<void> {
  return new Promise((resolve) => connection.once(name, () => resolve()));
}

/** A published event as the append script writes it. */
const published = (runId: string, text: string) =>
  JSON.stringify({ id: `${Date.now()}-0`, runId, type: 'message.delta', data: { text } });

describe('EventHub across a Redis outage', () => {
  it('refuses subscriptions while Redis is down without keeping them, and resubscribes what it keeps', async () => {
    const redis = await startOwnRedis();
    cleanups.push(() => redis.stop());
    const keys = createKeys(uniquePrefix('hub'));
    const subscriber = await connect(redis, 'fail-fast');
    const hub = new EventHub(subscriber, keys);
    const kept: RunEvent[] = [];
    const received = new Promise<RunEvent>((resolve) => {
      void hub.subscribe('run_kept', (event) => {
        kept.push(event);
        resolve(event);
      });
    });
    const leave = await hub.subscribe('run_left', () => {
      throw new Error('the channel of a listener that left while Redis was down was not dropped');
    });
    expect(hub.channels).toBe(2);

    const closed = next(subscriber, 'close');
    await redis.kill();
    await closed;
    await expect(hub.subscribe('run_refused', () => {})).rejects.toThrow(/writeable|closed/i);
    await leave();
    expect(hub.channels).toBe(1);

    const ready = next(subscriber, 'ready');
    await redis.restart();
    await ready;
    const publisher = await connect(redis, 'wait');
    // Redis's own view: the kept channel only (the refused one never, the left one dropped).
    await vi.waitFor(async () =>
      expect(await publisher.pubsub('CHANNELS', `${keys.namespace}:events:*`)).toEqual([
        keys.run('run_kept').eventsChannel,
      ]),
    );
    await publisher.publish(keys.run('run_left').eventsChannel, published('run_left', 'nobody listens'));
    await publisher.publish(keys.run('run_kept').eventsChannel, published('run_kept', 'after the outage'));
    expect((await received).data).toEqual({ text: 'after the outage' });
    expect(kept).toHaveLength(1);
  });
});
