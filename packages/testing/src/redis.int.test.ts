import { createConnection } from 'node:net';
import { describe, expect, it } from 'vitest';
import { testRedisUrl } from './context.js';
import { startOwnRedis, startRedis } from './redis.js';

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
});
