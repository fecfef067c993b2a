import { describe, expect, it } from 'vitest';
import { createKeys } from './keys.js';

describe('queue shards', () => {
  it('keeps the one queue under the prefix itself, and gives each of several a hash tag of its own', () => {
    expect(createKeys('{tether}').shardPrefix(0)).toBe('{tether}');
    const keys = createKeys('{tether}', 3);
    expect([0, 1, 2].map((shard) => keys.shardPrefix(shard))).toEqual([
      '{tether:0}',
      '{tether:1}',
      '{tether:2}',
    ]);
    expect(() => keys.shardPrefix(3)).toThrow(/no queue shard 3/);
    expect(() => createKeys('{tether}', 0)).toThrow(RangeError);
    expect(() => createKeys('{tether}', 65)).toThrow(RangeError);
  });

  it('chooses a run’s shard by a stable hash of its id, spread evenly', () => {
    const keys = createKeys('{tether}', 3);
    // Stable across processes and versions: a run's shard never moves.
    expect(keys.shardOf('run_01m8npxnfgzwg0xxz4ea5cwhnq')).toBe(
      keys.shardOf('run_01m8npxnfgzwg0xxz4ea5cwhnq'),
    );
    expect(createKeys('{tether}', 1).shardOf('run_anything')).toBe(0);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30_000; i++) {
      const id = `run_01m8np${i.toString(36).padStart(20, '0')}`;
      counts[keys.shardOf(id)] = (counts[keys.shardOf(id)] ?? 0) + 1;
    }
    for (const count of counts) expect(Math.abs(count - 10_000)).toBeLessThan(500);
  });
});
