import { startRedisCluster, type TestRedisCluster } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  connectionReady,
  createRedisConnection,
  isCluster,
  isRedisConnectionError,
  RedisBreaker,
  type RedisClient,
  type RedisMode,
  type RedisOutage,
} from '../src/redis/index.js';

let cluster: TestRedisCluster;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  await cluster?.stop();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const seeds = () =>
  cluster.nodes.map((node) => {
    const [host, port] = node.split(':');
    return { host: host as string, port: Number(port) };
  });

async function connect(mode: RedisMode, options: { subscriber?: boolean } = {}): Promise<RedisClient> {
  const connection = createRedisConnection({
    url: 'redis://127.0.0.1:1',
    clusterNodes: seeds(),
    name: `test-${mode}${options.subscriber ? '-sub' : ''}`,
    mode,
    subscriber: options.subscriber,
    onError: () => {},
  });
  cleanups.push(() => connection.disconnect());
  await connectionReady(connection);
  return connection;
}

/**
 * The next `name` event of a connection. Not `events.once`: that rejects on an `error` event, and a
 * connection reports each failed connection attempt as one while a node is down.
 */
function next(connection: RedisClient, name: 'ready' | 'close'): Promise<void> {
  return new Promise((resolve) => connection.once(name, () => resolve()));
}

/** A plain connection to master `index`. */
function node(index: number): Redis {
  const connection = new Redis(`redis://${cluster.nodes[index]}`, { maxRetriesPerRequest: 1 });
  connection.on('error', () => {});
  cleanups.push(() => connection.disconnect());
  return connection;
}

describe('a connection to a Redis Cluster', () => {
  it('is a Cluster client; with a master down, fail-fast commands of its slots fail at once, wait ones are sent once it is back, and the breaker opens and closes', async () => {
    const failFast = await connect('fail-fast');
    const wait = await connect('wait');
    if (!isCluster(failFast) || !isCluster(wait)) throw new Error('not cluster clients');
    // Ready means every master's connection is: a fail-fast command finds none still connecting.
    expect(failFast.nodes('master').map((node) => node.status)).toEqual(['ready', 'ready', 'ready']);

    let opened!: (outage: RedisOutage) => void;
    const open = new Promise<RedisOutage>((resolve) => {
      opened = resolve;
    });
    let closed!: (downMs: number) => void;
    const close = new Promise<number>((resolve) => {
      closed = resolve;
    });
    const breaker = new RedisBreaker({
      connections: { commands: failFast },
      onOpen: (outage) => opened(outage),
      onClose: ({ downMs }) => closed(downMs),
    });
    cleanups.push(() => breaker.dispose());
    await vi.waitFor(() => expect(breaker.available).toBe(true));

    // `{a}` and `{b}` hash to slots on different masters (the test cluster spreads the slots evenly).
    const ownerOf = async (key: string) => {
      const slot = Number(await failFast.cluster('KEYSLOT', key));
      return cluster.nodes.indexOf(failFast.slots[slot]?.[0] ?? '');
    };
    const victim = await ownerOf('{a}');
    expect(victim).toBeGreaterThanOrEqual(0);
    expect(await ownerOf('{b}')).not.toBe(victim);
    await cluster.kill(victim);

    expect((await open).reason).toMatch(/commands/);
    expect(breaker.available).toBe(false);
    const refused = await failFast.set('{a}:fail-fast', '1').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isRedisConnectionError(refused)).toBe(true);
    // The other masters still answer.
    expect(await failFast.set('{b}:fail-fast', '1')).toBe('OK');
    let waited: string | undefined;
    const held = wait.set('{a}:wait', 'kept').then((reply) => {
      waited = reply;
    });
    expect(await wait.set('{b}:wait', '1')).toBe('OK');
    expect(waited).toBeUndefined();

    await cluster.restart(victim);
    await held;
    expect(waited).toBe('OK');
    expect(await failFast.get('{a}:wait')).toBe('kept');
    expect(await close).toBeGreaterThan(0);
    expect(breaker.available).toBe(true);
  });

  it('subscribes through one node, and when that node goes down says close, then ready on another with its channels', async () => {
    const subscriber = await connect('wait', { subscriber: true });
    expect(isCluster(subscriber)).toBe(false);
    const messages: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => messages.push(message));
    await subscriber.subscribe('test:cluster:chan');
    // Classic pub/sub is the whole cluster's: a PUBLISH on any master reaches the subscriber.
    const nodes = cluster.nodes.map((_, index) => node(index));
    for (const [index, publisher] of nodes.entries())
      await publisher.publish('test:cluster:chan', `m${index}`);
    // Each reaches it, in no set order: a message published on another master comes over the
    // cluster bus, and may arrive after one published later on the subscriber's own node.
    await vi.waitFor(() => expect([...messages].sort()).toEqual(['m0', 'm1', 'm2']));

    const named = async (connections: Redis[]) =>
      (await Promise.all(connections.map((c) => c.client('LIST') as Promise<string>))).map((list) =>
        list.includes('name=test-wait-sub'),
      );
    const home = (await named(nodes)).indexOf(true);
    expect(home).toBeGreaterThanOrEqual(0);
    const down = next(subscriber, 'close');
    const back = next(subscriber, 'ready');
    await cluster.kill(home);
    await down;
    await back;
    const live = nodes.filter((_, index) => index !== home);
    expect((await named(live)).filter(Boolean)).toHaveLength(1);
    // Resubscribed on its new node: a PUBLISH reaches it again (sent until the SUBSCRIBE is through).
    await vi.waitFor(async () => {
      await (live[0] as Redis).publish('test:cluster:chan', 'after');
      expect(messages.at(-1)).toBe('after');
    });
    await cluster.restart(home);
  });
});
