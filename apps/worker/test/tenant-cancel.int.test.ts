/**
 * A run cancelled just as a worker takes its job, while its tenant is at its cap
 * (`TETHER_TENANT_MAX_RUNNING`): the worker holds the job's lock from the moment BullMQ hands it
 * over until it delays the job, so the API's cancel cannot take the job off the queue and leaves
 * the run to the worker (the cancel flag). The run must end cancelled at once and leave its
 * tenant's line, not keep its place until a slot frees (and then be handed one it never uses).
 * The worker's `beforeCappedDelay` hook (the harness's `holdCappedMs`) holds that window open for
 * the cancel to land in.
 */
import { describe, expect, it } from 'vitest';
import { call, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

describe('a run cancelled while a worker puts it in its tenant line', () => {
  it('ends cancelled at once and leaves the line; the slot stays with its holder, the run behind keeps its place', async () => {
    const d = await deploy('tenant-cancel');
    await d.startWorker(
      { TETHER_TENANT_MAX_RUNNING: '1', TETHER_WORKER_CONCURRENCY: '3' },
      // The attempt over the cap keeps its job this long before delaying it: the cancel lands here.
      { holdCappedMs: 4000 },
    );
    const slotKeys = d.keys.tenantSlots(TENANT);
    // The tenant's one slot, held for longer than the test waits for the cancel.
    const first = await d.submit([
      { toolCalls: [call('bash', { command: 'sleep 60' })] },
      { content: 'first done' },
    ]);
    await d.waitForEvent(first, 'tool.call');
    const second = await d.submit([{ content: 'second done' }]);
    await until(
      async () => (await d.redis.zrange(slotKeys.parked, '0', '-1')).includes(second),
      'the second run to wait in line for the slot',
    );
    const third = await d.submit([{ content: 'third done' }]);
    await until(
      async () => (await d.redis.zrange(slotKeys.parked, '0', '-1')).length === 2,
      'the third run to wait in line behind it',
    );

    expect(await d.service.cancel(TENANT, second)).toBe('queued');
    // The worker still held the job: the cancel was left to it (had it taken the job off the queue,
    // the run would be cancelled already).
    expect((await d.store.get(second))?.status).toBe('queued');
    expect(await d.service.getJob(second)).toBeDefined();

    // Well before the first run's command ends (60 s) and frees the slot.
    await d.waitForEvent(second, 'run.cancelled', 15_000);
    expect((await d.store.get(second))?.status).toBe('cancelled');
    expect(await d.redis.zrange(slotKeys.parked, '0', '-1')).toEqual([third]);
    expect(await d.redis.zrange(slotKeys.running, '0', '-1')).toEqual([first]);
    expect((await d.store.readEvents(second)).map((e) => e.type)).not.toContain('attempt.started');

    // The slot is still the first run's: cancelled, it gives it back to the run next in line.
    await d.service.cancel(TENANT, first);
    await d.waitForEvent(first, 'run.cancelled', 15_000);
    await d.waitForEvent(third, 'run.completed', 20_000);
    await until(
      async () => (await d.redis.exists(slotKeys.running, slotKeys.holders, slotKeys.parked)) === 0,
      "the tenant's slots and line to be empty",
    );
  });
});
