import { describe, expect, it } from 'vitest';
import { releaseTenantSlot } from '../../src/tenant-slots/commands/scripts.js';
import { useRedis } from './fixture.js';
import { SlotFixture } from './slot-fixture.js';

const redis = useRedis();
const RESERVE = 60_000;

function release(slots: SlotFixture, runId: string, holder: string, cap = 2) {
  return releaseTenantSlot.run(redis, {
    keys: slots.keys,
    args: { runId, holder, cap, reserveMs: RESERVE, ttlMs: 3_600_000 },
  });
}

describe('releaseTenantSlot', () => {
  it('gives the slot back; with nobody waiting, nobody is handed one', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1', run_b: 'w1:t2' });
    expect(await release(slots, 'run_a', 'w1:t1')).toEqual([]);
    expect(await slots.state()).toEqual({ running: { run_b: 'w1:t2' }, parked: [] });
  });

  it('hands the freed slot to the run waiting longest, which leaves the line and holds it for the reserve', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1', run_b: 'w1:t2' });
    await slots.park('run_c', 'run_d');
    expect(await release(slots, 'run_a', 'w1:t1')).toEqual(['run_c']);
    expect(await slots.state()).toEqual({ running: { run_b: 'w1:t2', run_c: '' }, parked: ['run_d'] });
    expect(await slots.expiry('run_c')).toBeGreaterThan(Date.now() + RESERVE - 5_000);
  });

  it('hands every free slot (leases that ran out included) to the runs waiting, oldest first', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1' });
    await slots.hold({ run_dead: 'w9:t9' }, -1);
    await slots.park('run_c', 'run_d', 'run_e');
    expect(await release(slots, 'run_a', 'w1:t1', 3)).toEqual(['run_c', 'run_d', 'run_e']);
    expect(await slots.state()).toEqual({ running: { run_c: '', run_d: '', run_e: '' }, parked: [] });
  });

  it('leaves a slot that another attempt took over (this one lost the run), and hands out none', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w2:new', run_b: 'w1:t2' });
    await slots.park('run_c');
    expect(await release(slots, 'run_a', 'w1:old')).toEqual([]);
    expect(await slots.state()).toEqual({ running: { run_a: 'w2:new', run_b: 'w1:t2' }, parked: ['run_c'] });
  });

  it("gives back a slot handed over and never taken up (holder ''), handing it on", async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_gone: '', run_b: 'w1:t2' });
    await slots.park('run_c');
    expect(await release(slots, 'run_gone', '')).toEqual(['run_c']);
    expect(await slots.state()).toEqual({ running: { run_b: 'w1:t2', run_c: '' }, parked: [] });
  });

  it('changes nothing for a run with no slot, with every slot taken', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1', run_b: 'w1:t2' });
    await slots.park('run_c');
    const before = await slots.state();
    expect(await release(slots, 'run_x', 'w1:t9')).toEqual([]);
    expect(await slots.state()).toEqual(before);
  });
});
