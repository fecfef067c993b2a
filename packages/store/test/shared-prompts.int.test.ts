import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { SHARED_PROMPT_REFRESH_MS, SHARED_PROMPT_TTL_S, SharedPrompts } from '../src/runs/index.js';

/**
 * The parts of system prompts that runs share, on a real Redis (a cluster too): kept under their
 * reference with a long expiry, written again once a day by a process that uses them, read once
 * per process.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'shared-prompts', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('prompts'));

describe('shared prompts', () => {
  it('keeps a part with a 400-day expiry, and writes it again only once a day', async () => {
    let now = 1_000_000;
    const prompts = new SharedPrompts({ redis, keys, now: () => now });
    const key = keys.sharedPrompt('ref-a');
    await prompts.keep('ref-a', 'the rules');
    expect(await redis.get(key)).toBe('the rules');
    expect(await redis.ttl(key)).toBeGreaterThan(SHARED_PROMPT_TTL_S - 60);
    expect(SHARED_PROMPT_TTL_S).toBeGreaterThan(365 * 24 * 3600);

    // Within the day: no write (the key, deleted behind its back, stays gone).
    await redis.del(key);
    now += SHARED_PROMPT_REFRESH_MS - 1;
    await prompts.keep('ref-a', 'the rules');
    expect(await redis.exists(key)).toBe(0);
    // A day on: written again, its expiry pushed back.
    now += 1;
    await prompts.keep('ref-a', 'the rules');
    expect(await redis.get(key)).toBe('the rules');
  });

  it('reads a part another process kept, once; a part nobody kept is undefined', async () => {
    await new SharedPrompts({ redis, keys }).keep('ref-b', 'other rules');
    const reader = new SharedPrompts({ redis, keys });
    expect(await reader.get('ref-b')).toBe('other rules');
    await redis.del(keys.sharedPrompt('ref-b'));
    expect(await reader.get('ref-b')).toBe('other rules');
    expect(await reader.get('ref-none')).toBeUndefined();
    // A part only read is still written by this process's keep (it never wrote it).
    await reader.keep('ref-b', 'other rules');
    expect(await redis.get(keys.sharedPrompt('ref-b'))).toBe('other rules');
  });

  it('holds a bounded number of parts in memory, the least recently used dropped first', async () => {
    const prompts = new SharedPrompts({ redis, keys });
    for (let i = 0; i < 257; i++) await prompts.keep(`ref-many-${i}`, `part ${i}`);
    await redis.del(keys.sharedPrompt('ref-many-0'), keys.sharedPrompt('ref-many-256'));
    // The first one fell out (read from Redis: gone); the last one is still held.
    expect(await prompts.get('ref-many-0')).toBeUndefined();
    expect(await prompts.get('ref-many-256')).toBe('part 256');
  });
});
