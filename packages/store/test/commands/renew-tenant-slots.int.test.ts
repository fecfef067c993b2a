import { describe, expect, it } from 'vitest';
import { renewTenantSlots } from '../../src/tenant-slots/commands/scripts.js';
import { useRedis } from './fixture.js';
import { SlotFixture } from './slot-fixture.js';

const redis = useRedis();
const LEASE = 15_000;

function renew(slots: SlotFixture, held: Record<string, string>) {
  return renewTenantSlots.run(redis, {
    keys: slots.keys,
    args: { leaseMs: LEASE, ttlMs: 3_600_000, held: Object.entries(held).flat() },
  });
}

describe('renewTenantSlots', () => {
  it('renews the leases of the slots their attempts hold, from now (a late one too, not yet dropped)', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1' }, 1_000);
    await slots.hold({ run_b: 'w1:t2' }, -500);
    expect(await renew(slots, { run_a: 'w1:t1', run_b: 'w1:t2' })).toEqual([]);
    for (const runId of ['run_a', 'run_b']) {
      expect(await slots.expiry(runId)).toBeGreaterThan(Date.now() + LEASE - 1_000);
    }
  });

  it('answers as lost, and leaves alone, a slot taken over by another attempt or gone', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w2:new' }, 1_000);
    const expiry = await slots.expiry('run_a');
    expect(await renew(slots, { run_a: 'w1:old', run_gone: 'w1:t2' })).toEqual(['run_a', 'run_gone']);
    expect(await slots.expiry('run_a')).toBe(expiry);
    expect(await slots.state()).toEqual({ running: { run_a: 'w2:new' }, parked: [] });
  });
});
