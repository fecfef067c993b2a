import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { testRedisUrl, uniquePrefix } from './context.js';
import { freePort, waitForPing } from './redis.js';
import { type Stack, startStack } from './stack.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function workspaceRoot(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tether-stack-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function track(stack: Stack): Stack {
  cleanups.push(() => stack.stop());
  return stack;
}

const alive = (stack: Stack) =>
  stack.processes.filter((spawned) => spawned.child.exitCode === null && spawned.child.signalCode === null);

describe('startStack', () => {
  it('starts APIs and workers on a given Redis, ready once every worker is listed, and stops them all', async () => {
    const stack = track(
      await startStack({
        redis: testRedisUrl(),
        apis: 2,
        workers: ['w-a', 'w-b'],
        env: {
          TETHER_QUEUE_PREFIX: uniquePrefix('stack'),
          TETHER_WORKSPACE_ROOT: await workspaceRoot(),
          TETHER_SANDBOX: 'none',
          // Above info: readiness does not depend on the log lines.
          LOG_LEVEL: 'warn',
        },
      }),
    );
    expect(stack.redis).toBeUndefined();
    expect(stack.apis.map((api) => api.name)).toEqual(['api-1', 'api-2']);
    expect(stack.urls).toHaveLength(2);
    for (const url of stack.urls) {
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      const { workers } = (await ready.json()) as { workers: { id: string }[] };
      expect(workers.map((worker) => worker.id)).toEqual(['w-a', 'w-b']);
    }
    expect(alive(stack)).toHaveLength(4);
    await stack.stop();
    expect(alive(stack)).toEqual([]);
    for (const spawned of stack.processes) expect((await spawned.exited).code).toBe(0);
  });

  it('starts a Redis of its own when given none, and stops it last', async () => {
    const lines: string[] = [];
    const stack = track(
      await startStack({
        workers: 1,
        env: { TETHER_WORKSPACE_ROOT: await workspaceRoot(), TETHER_SANDBOX: 'none', LOG_LEVEL: 'info' },
        onLine: (name, line) => lines.push(`${name} ${line}`),
      }),
    );
    expect(stack.redis).toBeDefined();
    expect(stack.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(lines.some((line) => /^worker-1 .*"msg":"worker ready"/.test(line))).toBe(true);
    expect(lines.some((line) => /^api .*"msg":"Server listening at/.test(line))).toBe(true);
    await stack.stop();
    await expect(waitForPing(stack.redisUrl, 300)).rejects.toThrow(/did not answer PING/);
  });

  it('fails naming the process that exited before the stack was ready, and stops the rest', async () => {
    const port = await freePort();
    const promise = startStack({
      redis: testRedisUrl(),
      port,
      workers: 2,
      env: { TETHER_QUEUE_PREFIX: uniquePrefix('stack'), TETHER_WORKSPACE_ROOT: await workspaceRoot() },
      workerEnv: { TETHER_WORKER_CONCURRENCY: 'many' },
    });
    await expect(promise).rejects.toThrow(
      /worker-\d exited \(code 78, signal null\)[\s\S]*TETHER_WORKER_CONCURRENCY/,
    );
    // The API it had started is gone (it was killed, not left listening).
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });
});
