/**
 * A tenant slot whose lease lapsed (a renewal late on a loaded host) and went to another run: the run
 * that held it must not go on beside the new holder, or the tenant runs over its cap. Its renewal
 * answers the slot lost, and its attempt stops as one whose lock is lost does: its commands killed,
 * its job back to waiting, where it takes a slot again or waits for one.
 */
import type { RunEvent } from '@tether/protocol';
import { promoteJob } from '@tether/store/runs';
import { TenantSlots } from '@tether/store/tenant-slots';
import { describe, expect, it } from 'vitest';
import { call, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

/** A command no other test runs, to find it among the host's processes. */
const FIRST_SLEEP = 'sleep 30.4817';

describe('a tenant slot whose lease lapsed', () => {
  it('went to another run: the run that held it stops its attempt and waits for a slot, never running beside the new holder', async () => {
    const d = await deploy('tenant-lease');
    // One worker, a cap of 1: every attempt of the tenant goes through the same keeper. A 6 s lock
    // (renewed every 3 s): the lapse is the test's own, not one of a renewal late on a loaded host.
    await d.startWorker({
      TETHER_TENANT_MAX_RUNNING: '1',
      TETHER_WORKER_CONCURRENCY: '4',
      TETHER_LOCK_DURATION_MS: '6000',
      TETHER_STALLED_INTERVAL_MS: '3000',
    });
    const slotKeys = d.keys.tenantSlots(TENANT);
    // The first attempt sleeps long; the one after it (the call run again) finds the marker and ends at once.
    const first = await d.submit([
      {
        toolCalls: [
          call('bash', {
            command: `if [ -e started ]; then echo again; else touch started; ${FIRST_SLEEP}; fi`,
          }),
        ],
      },
      { content: 'first done' },
    ]);
    await d.waitForEvent(first, 'tool.call');
    // The second run looks, after two of the lock's renewals, whether the first one's command still runs.
    const second = await d.submit([
      {
        toolCalls: [
          call('bash', {
            command: `sleep 6; if pgrep -f '${FIRST_SLEEP.replace('.', '[.]')}' >/dev/null; then echo BESIDE; else echo ALONE; fi`,
          }),
        ],
      },
      { content: 'second done' },
    ]);
    await until(
      async () => (await d.redis.zrange(slotKeys.parked, '0', '-1')).includes(second),
      'the second run to wait for the slot',
    );
    // The lapse: the first run's lease is put in the past (as a renewal that came too late leaves it),
    // and a release (anybody's) drops it and hands the free slot to the run waiting, as the scripts do.
    // A renewal landing between the two puts the lease back: then look again.
    const slots = new TenantSlots({ redis: d.redis, keys: d.keys, cap: 1, leaseMs: 6_000 });
    let handed: string[] = [];
    await until(async () => {
      await d.redis.zadd(slotKeys.running, 'XX', 1, first);
      handed = await slots.release(TENANT, 'nobody', 'nobody');
      return handed.length > 0;
    }, 'the lapsed slot to be handed on');
    expect(handed).toEqual([second]);
    await promoteJob(await d.service.getJob(second));

    await d.waitForEvent(second, 'run.completed', 30_000);
    await d.waitForEvent(first, 'run.completed', 30_000);
    const secondEvents = await d.store.readEvents(second);
    const looked = secondEvents.find((e): e is RunEvent<'tool.result'> => e.type === 'tool.result');
    // The first run's command was killed once its renewal found the slot gone.
    expect(looked?.data.content).toContain('ALONE');
    // The first run's next attempt started only once the second had ended and given the slot back.
    const firstEvents = await d.store.readEvents(first);
    const starts = firstEvents.filter((e) => e.type === 'attempt.started');
    expect(starts).toHaveLength(2);
    const ms = (id: string) => Number(id.split('-')[0]);
    const secondEnd = secondEvents.find((e) => e.type === 'run.completed');
    expect(ms(starts[1]?.id ?? '0')).toBeGreaterThanOrEqual(ms(secondEnd?.id ?? 'x'));
    // Its call ran again (at least once for the call in flight) and went on from the checkpoint.
    const results = firstEvents.filter((e): e is RunEvent<'tool.result'> => e.type === 'tool.result');
    expect(
      results.map((e) => e.data.content),
      firstEvents.map((e) => `${e.type} ${JSON.stringify(e.data)}`).join('\n'),
    ).toEqual([expect.stringContaining('again')]);
    expect(await d.redis.exists(slotKeys.running, slotKeys.holders, slotKeys.parked)).toBe(0);
  });
});
