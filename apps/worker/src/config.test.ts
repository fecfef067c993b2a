import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from './config.js';
import { shardConcurrency } from './worker.js';

describe('the shards a worker takes', () => {
  it('are every shard by default, or the ones TETHER_WORKER_SHARDS lists', () => {
    expect(loadWorkerConfig({}).shards).toEqual([0]);
    expect(loadWorkerConfig({ TETHER_QUEUE_SHARDS: '3' }).shards).toEqual([0, 1, 2]);
    expect(loadWorkerConfig({ TETHER_QUEUE_SHARDS: '3', TETHER_WORKER_SHARDS: '2, 0,2' }).shards).toEqual([
      0, 2,
    ]);
  });

  it('refuses a shard that does not exist, naming the variable and the range', () => {
    for (const bad of ['3', '-1', 'a', '0,,1', ' ']) {
      expect(() => loadWorkerConfig({ TETHER_QUEUE_SHARDS: '3', TETHER_WORKER_SHARDS: bad })).toThrow(
        /TETHER_WORKER_SHARDS must list shard numbers from 0 to 2/,
      );
    }
    expect(() => loadWorkerConfig({ TETHER_QUEUE_SHARDS: '0' })).toThrow(/TETHER_QUEUE_SHARDS/);
  });

  it("share the worker's slots out evenly, at least one each", () => {
    expect([0, 1, 2].map((i) => shardConcurrency(4, 3, i))).toEqual([2, 1, 1]);
    expect([0, 1].map((i) => shardConcurrency(8, 2, i))).toEqual([4, 4]);
    expect([0, 1, 2].map((i) => shardConcurrency(1, 3, i))).toEqual([1, 1, 1]);
  });
});

describe("a tenant's cap on running runs", () => {
  it('is none by default (0), or the number TETHER_TENANT_MAX_RUNNING gives', () => {
    expect(loadWorkerConfig({}).tenantMaxRunning).toBe(0);
    expect(loadWorkerConfig({ TETHER_TENANT_MAX_RUNNING: '0' }).tenantMaxRunning).toBe(0);
    expect(loadWorkerConfig({ TETHER_TENANT_MAX_RUNNING: '2' }).tenantMaxRunning).toBe(2);
  });

  it('refuses what is not a whole number from 0 to 1,000,000, naming the variable', () => {
    for (const bad of ['-1', '1.5', 'two', '1000001']) {
      expect(() => loadWorkerConfig({ TETHER_TENANT_MAX_RUNNING: bad })).toThrow(
        /TETHER_TENANT_MAX_RUNNING must be an integer from 0 to 1000000/,
      );
    }
  });
});
