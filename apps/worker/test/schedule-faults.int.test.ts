/**
 * Exactly one firing per tick across worker processes: a schedule of `every: "1s"` for about 30
 * ticks with three workers, one of them killed with -9 midway (its held jobs taken over once their
 * locks lapse). Every run a tick makes has an id from its tick, so runs are counted per tick: none
 * doubled, none missing after the first. Serial: it times ticks of a second against the machine.
 */

import { idTime } from '@tether/protocol';
import { type ScheduleRecord, ScheduleStore } from '@tether/store/schedules';
import { describe, expect, it } from 'vitest';
import { TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

describe('a schedule fired by three workers, one killed with -9', () => {
  it('makes one run per tick, none doubled and none missing', async () => {
    const d = await deploy('schedule-faults');
    const schedules = new ScheduleStore({ redis: d.redis, keys: d.keys });
    try {
      const workers = await Promise.all([d.startWorker(), d.startWorker(), d.startWorker()]);
      const schedule: ScheduleRecord = {
        name: 'heartbeat',
        every: '1s',
        timezone: 'UTC',
        overlap: 'enqueue',
        catchUp: 'one',
        paused: false,
        spec: { input: 'tick', model: { provider: 'replay', script: [{ content: 'ok' }] } },
        createdAt: Date.now(),
        updatedAt: Date.now(),
      };
      await schedules.create(TENANT, schedule);
      await schedules.arm(TENANT, schedule, 1_000);
      const count = async () => (await schedules.runIds(TENANT, 'heartbeat', { limit: 1_000 })).ids.length;
      await until(async () => (await count()) >= 12, '12 ticks', 30_000);
      await workers[0]?.stop('SIGKILL');
      await until(async () => (await count()) >= 30, '30 ticks', 40_000);
      await schedules.disarm(TENANT, 'heartbeat');

      // Every run of the tenant, not only those the schedule listed: a doubled tick would be another id.
      const { runs } = await d.store.list(TENANT, { limit: 100 });
      const scheduled = runs.filter((run) => run.scheduleId === 'sch_heartbeat');
      const perTick = new Map<number, number>();
      for (const run of scheduled) {
        const tick = idTime(run.id) as number;
        perTick.set(tick, (perTick.get(tick) ?? 0) + 1);
      }
      expect([...perTick.values()].filter((n) => n !== 1)).toEqual([]);
      const ticks = [...perTick.keys()].sort((a, b) => a - b);
      expect(ticks.length).toBeGreaterThanOrEqual(30);
      const gaps = ticks.slice(1).map((tick, i) => tick - (ticks[i] as number));
      expect(gaps.filter((gap) => gap !== 1_000)).toEqual([]);
      // Each run completes (the killed worker's, if it held one, on another worker).
      await until(
        async () =>
          (await d.store.getMany(scheduled.map((run) => run.id))).every((run) => run?.status === 'completed'),
        'every run completed',
      );
    } finally {
      await schedules.close();
    }
  });
});
