import { testRedisClusterNodes, testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createRedisConnection, keySlot, SlotPipelines } from '../src/redis/index.js';

// The test Redis: one server, or in the `cluster` project a Redis Cluster of three masters.
const redis = createRedisConnection({
  ...testRedisTarget(),
  name: 'test-slots',
  mode: 'wait',
  onError: () => {},
});
afterAll(() => redis.quit());
const onCluster = testRedisClusterNodes() !== undefined;

/**
 * `count` keys with hash tags of their own, each in a slot of its own: spread over the slots (and a
 * cluster's masters). CRC16 of tags that differ only in their last characters can collide, more often
 * than chance would, so tags whose slot is taken are skipped.
 */
function spreadKeys(count: number): string[] {
  const base = uniquePrefix('slots').slice(1, -1);
  const bySlot = new Map<number, string>();
  for (let i = 0; bySlot.size < count; i++) {
    const key = `{${base}-${i}}:k`;
    if (!bySlot.has(keySlot(key))) bySlot.set(keySlot(key), key);
  }
  return [...bySlot.values()];
}

describe('SlotPipelines', () => {
  it('sends the commands of many slots together and answers in the order they were queued', async () => {
    const keys = spreadKeys(40);
    expect(new Set(keys.map(keySlot)).size).toBe(40);
    const made = vi.spyOn(redis, 'pipeline');
    const pipelines = new SlotPipelines(redis);
    for (const [i, key] of keys.entries()) {
      pipelines.add(key, (pipeline) => {
        pipeline.set(key, String(i));
        pipeline.incr(key);
      });
    }
    // A second command for the first key, queued after all the others.
    pipelines.add(keys[0] as string, (pipeline) => pipeline.get(keys[0] as string));
    const replies = await pipelines.exec();
    // One round trip on a single server; one pipeline per slot on a cluster.
    expect(made).toHaveBeenCalledTimes(onCluster ? 40 : 1);
    made.mockRestore();
    expect(replies).toEqual([
      ...keys.flatMap((_, i) => [
        [null, 'OK'],
        [null, i + 1],
      ]),
      [null, '1'],
    ]);
  });

  it("answers a command's error in its place, and the others as usual", async () => {
    const [list, text] = spreadKeys(2) as [string, string];
    await redis.rpush(list, 'a');
    const replies = await new SlotPipelines(redis)
      .add(text, (pipeline) => pipeline.set(text, 'x'))
      .add(list, (pipeline) => pipeline.get(list))
      .add(text, (pipeline) => pipeline.get(text))
      .exec();
    expect(replies[0]).toEqual([null, 'OK']);
    expect(replies[1]?.[0]?.message).toMatch(/WRONGTYPE/);
    expect(replies[2]).toEqual([null, 'x']);
    expect(await new SlotPipelines(redis).exec()).toEqual([]);
  });

  // Defined in the cluster project only (not skipped in the other): it is about a cluster.
  const onClusterIt = onCluster ? it : () => undefined;
  onClusterIt('on a cluster, where one pipeline of keys on several masters is refused', async () => {
    const keys = spreadKeys(10);
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.get(key);
    await expect(pipeline.exec()).rejects.toThrow(/same slots allocation group/);
  });
});
