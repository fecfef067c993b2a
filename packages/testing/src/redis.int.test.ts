import { createConnection } from 'node:net';
import { describe, expect, it } from 'vitest';
import { testRedisUrl } from './context.js';
import { startOwnRedis, startRedis, startRedisCluster } from './redis.js';

function roundTrip(url: string, command: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: hostname, port: Number(port) });
    socket.on('connect', () => socket.write(command));
    socket.once('data', (chunk) => {
      socket.end();
      resolve(chunk.toString());
    });
    socket.on('error', reject);
  });
}

describe('test Redis', () => {
  it('is provided to integration tests and answers commands', async () => {
    const reply = await roundTrip(testRedisUrl(), 'ECHO tether\r\n');
    expect(reply).toBe('$6\r\ntether\r\n');
  });

  it('starts a private redis-server and stops it', async () => {
    const redis = await startRedis({ url: undefined });
    if (process.env.REDIS_URL) {
      expect(redis.source).toBe('env');
    } else {
      expect(redis.source).not.toBe('env');
    }
    expect(await roundTrip(redis.url, 'PING\r\n')).toBe('+PONG\r\n');
    await redis.stop();
    if (redis.source !== 'env') {
      await expect(roundTrip(redis.url, 'PING\r\n')).rejects.toThrow();
    }
  });

  it('kills and restarts a redis-server of its own, which keeps its data', async () => {
    const redis = await startOwnRedis();
    try {
      expect(await roundTrip(redis.url, 'SET kept yes\r\n')).toBe('+OK\r\n');
      await redis.kill();
      expect(redis.pid()).toBeUndefined();
      await expect(roundTrip(redis.url, 'PING\r\n')).rejects.toThrow(/ECONNREFUSED/);
      await redis.restart();
      expect(await roundTrip(redis.url, 'GET kept\r\n')).toBe('$3\r\nyes\r\n');
    } finally {
      await redis.stop();
    }
  });

  it('starts a cluster of three masters that share the slots, kills and restarts one, and stops', async () => {
    const cluster = await startRedisCluster();
    const urls = cluster.nodes.map((node) => `redis://${node}`);
    try {
      expect(cluster.nodes).toHaveLength(3);
      for (const url of urls) {
        const info = await roundTrip(url, 'CLUSTER INFO\r\n');
        expect(info).toMatch(/cluster_state:ok/);
        expect(info).toMatch(/cluster_slots_assigned:16384/);
        expect(info).toMatch(/cluster_known_nodes:3/);
      }
      // `{a}`, `{b}` and `{c}` hash to slots 15495, 3300 and 7365: one on each master.
      const owners = await Promise.all(
        ['{a}', '{b}', '{c}'].map(async (key) => {
          const replies = await Promise.all(urls.map((url) => roundTrip(url, `SET ${key} 1\r\n`)));
          expect(replies.filter((reply) => reply === '+OK\r\n')).toHaveLength(1);
          expect(replies.filter((reply) => reply.startsWith('-MOVED'))).toHaveLength(2);
          return replies.indexOf('+OK\r\n');
        }),
      );
      expect(new Set(owners).size).toBe(3);

      const victim = owners[0] as number;
      await cluster.kill(victim);
      await expect(roundTrip(urls[victim] as string, 'PING\r\n')).rejects.toThrow(/ECONNREFUSED/);
      await cluster.restart(victim);
      // Back with its slots (and without its data: the test cluster keeps none).
      expect(await roundTrip(urls[victim] as string, 'GET {a}\r\n')).toBe('$-1\r\n');
    } finally {
      await cluster.stop();
    }
    for (const url of urls) await expect(roundTrip(url, 'PING\r\n')).rejects.toThrow();
  });
});
