import { describe, expect, it } from 'vitest';
import { forgetTenantSlot } from '../../src/tenant-slots/commands/scripts.js';
import { useRedis } from './fixture.js';
import { SlotFixture } from './slot-fixture.js';

const redis = useRedis();

function forget(slots: SlotFixture, runId: string) {
  return forgetTenantSlot.run(redis, { keys: slots.keys, args: { runId } });
}

describe('forgetTenantSlot', () => {
  it('takes a run out of the line, the others keeping their order', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1' });
    await slots.park('run_c', 'run_d', 'run_e');
    expect(await forget(slots, 'run_d')).toBe(1);
    expect(await slots.state()).toEqual({ running: { run_a: 'w1:t1' }, parked: ['run_c', 'run_e'] });
  });

  it("frees a slot handed to the run and not taken up (holder '')", async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_handed: '', run_b: 'w1:t2' });
    await slots.park('run_c');
    expect(await forget(slots, 'run_handed')).toBe(1);
    expect(await slots.state()).toEqual({ running: { run_b: 'w1:t2' }, parked: ['run_c'] });
  });

  it('leaves a slot an attempt holds (that attempt gives it back), and changes nothing for a run it does not know', async () => {
    const slots = new SlotFixture(redis);
    await slots.hold({ run_a: 'w1:t1' });
    await slots.park('run_c');
    expect(await forget(slots, 'run_a')).toBe(0);
    expect(await forget(slots, 'run_unknown')).toBe(0);
    expect(await slots.state()).toEqual({ running: { run_a: 'w1:t1' }, parked: ['run_c'] });
  });
});
