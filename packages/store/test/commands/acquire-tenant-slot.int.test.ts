import { describe, expect, it } from 'vitest';
import { acquireTenantSlot } from '../../src/tenant-slots/commands/scripts.js';
import { useRedis } from './fixture.js';
import { SlotFixture } from './slot-fixture.js';

const redis = useRedis();
const LEASE = 15_000;
const TTL = 3_600_000;

function acquire(slots: SlotFixture, runId: string, holder: string, cap = 2) {
  return acquireTenantSlot.run(redis, {
    keys: slots.keys,
    args: { runId, holder, cap, leaseMs: LEASE, ttlMs: TTL },
  });
}

describe('acquireTenantSlot', () => {
  it('takes a free slot under the cap, its lease from Redis’s clock, and the keys expire', async () => {
    const slots = new SlotFixture(redis);
    const before = Date.now();
    expect(await acquire(slots, 'run_a', 'w1:t1')).toEqual([1]);
    expect(await slots.state()).toEqual({ running: { run_a: 'w1:t1' }, parked: [] });
    const expiry = await slots.expiry('run_a');
    expect(expiry).toBeGreaterThanOrEqual(before + LEASE - 1_000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + LEASE + 1_000);
    expect(await redis.pttl(slots.keys.running)).toBeGreaterThan(TTL - 60_000);
    expect(await redis.pttl(slots.keys.holders)).toBeGreaterThan(TTL - 60_000);
  });

  it('past the cap, the run waits in line in the order it first waited, and waiting again keeps its place', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1', run_b: 'w1:t2' });
    expect(await acquire(slots, 'run_c', 'w2:t3')).toEqual([0, 0]);
    expect(await acquire(slots, 'run_d', 'w2:t4')).toEqual([0, 1]);
    expect(await acquire(slots, 'run_c', 'w1:t5')).toEqual([0, 0]);
    expect(await slots.state()).toEqual({
      running: { run_a: 'w1:t1', run_b: 'w1:t2' },
      parked: ['run_c', 'run_d'],
    });
    expect(await redis.pttl(slots.keys.parked)).toBeGreaterThan(TTL - 60_000);
  });

  it('a run that has a slot takes it over, past the cap too: one handed to it, or an earlier attempt’s', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: '', run_b: 'w1:old' });
    await slots.park('run_c');
    expect(await acquire(slots, 'run_a', 'w2:t1')).toEqual([1]);
    expect(await acquire(slots, 'run_b', 'w2:t2')).toEqual([1]);
    expect(await slots.state()).toEqual({ running: { run_a: 'w2:t1', run_b: 'w2:t2' }, parked: ['run_c'] });
    // The lease is renewed from now.
    expect(await slots.expiry('run_b')).toBeGreaterThan(Date.now() + LEASE - 1_000);
  });

  it('drops the slots whose lease ran out, and a waiting run takes one, leaving the line', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1' });
    await slots.hold({ run_dead: 'w9:t9' }, -1);
    await slots.park('run_c', 'run_d');
    expect(await acquire(slots, 'run_d', 'w2:t2')).toEqual([1]);
    expect(await slots.state()).toEqual({ running: { run_a: 'w1:t1', run_d: 'w2:t2' }, parked: ['run_c'] });
  });

  it('takes a slot under the cap even with runs in line (they are woken by the releases)', async () => {
    const slots = new SlotFixture(redis);
    await slots.park('run_c');
    expect(await acquire(slots, 'run_new', 'w1:t1', 1)).toEqual([1]);
    expect(await slots.state()).toEqual({ running: { run_new: 'w1:t1' }, parked: ['run_c'] });
  });
});
