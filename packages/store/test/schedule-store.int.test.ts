import { idTime } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { RunService, RunStore } from '../src/runs/index.js';
import { type ScheduleRecord, ScheduleStore, scheduleRunId } from '../src/schedules/index.js';

/**
 * A tenant's schedules against the real script (each branch of saveSchedule: added, name taken,
 * the tenant's limit, replaced, missing), tenants apart, the pages of a schedule's runs, and the
 * submit of a run with a caller's id (a tick's): a second submit answers the first run, and puts
 * back the job of a queued run whose job was lost.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'schedules', onError: () => {} });
const keys = createKeys(uniquePrefix('sched'));
const schedules = new ScheduleStore({ redis, keys, maxSchedules: 2 });
const store = new RunStore({ redis, keys });
const runs = new RunService({ redis, keys, store });
afterAll(async () => {
  await schedules.close();
  await runs.close();
  await redis.quit();
});

let tenants = 0;
const tenant = () => `t${++tenants}-${Date.now().toString(36)}`;

const schedule = (name: string, extra: Partial<ScheduleRecord> = {}): ScheduleRecord => ({
  name,
  every: '1m',
  timezone: 'UTC',
  overlap: 'skip',
  catchUp: 'one',
  paused: false,
  spec: { input: 'tick', toolsets: [] },
  createdAt: 1,
  updatedAt: 1,
  ...extra,
});

describe('schedule store', () => {
  it("keeps a tenant's schedules under the tenant's hash tag, the queue under its own", () => {
    const own = keys.schedules('acme');
    for (const key of [own.index, own.state('n'), own.runs('n')]) expect(key).toContain('{acme}');
    expect(keys.scheduleQueuePrefix).toBe(`{${keys.namespace}:schedules}`);
  });

  it('adds within the limit and a free name, replaces what exists, keeps tenants apart', async () => {
    const [a, b] = [tenant(), tenant()];
    expect(await schedules.create(a, schedule('one'))).toBe('ok');
    expect(await schedules.create(a, schedule('one'))).toBe('exists');
    expect(await schedules.create(a, schedule('two'))).toBe('ok');
    expect(await schedules.create(a, schedule('three'))).toBe('limit');
    expect(await schedules.create(b, schedule('one'))).toBe('ok');
    // An empty array of the run's body stays an array (the script stores the JSON as given).
    expect((await schedules.get(a, 'one'))?.spec).toEqual({ input: 'tick', toolsets: [] });
    expect(await schedules.replace(a, schedule('one', { overlap: 'enqueue', updatedAt: 2 }))).toBe(true);
    expect(await schedules.get(a, 'one')).toMatchObject({ overlap: 'enqueue', createdAt: 1, updatedAt: 2 });
    expect(await schedules.replace(a, schedule('nine'))).toBe(false);
    expect((await schedules.list(a)).map((s) => s.name)).toEqual(['one', 'two']);
    expect(await schedules.delete(a, 'one')).toBe(true);
    expect(await schedules.delete(a, 'one')).toBe(false);
    expect(await schedules.create(a, schedule('three'))).toBe('ok');
    expect(await schedules.get(b, 'two')).toBeUndefined();
  });

  it("pages a schedule's runs, newest tick first", async () => {
    const t = tenant();
    for (let tick = 1; tick <= 5; tick++) await schedules.fired(t, 'n', `run_${tick}`, tick * 1_000);
    const first = await schedules.runIds(t, 'n', { limit: 2 });
    expect(first).toEqual({ ids: ['run_5', 'run_4'], nextCursor: 2 });
    const last = await schedules.runIds(t, 'n', { cursor: 4, limit: 2 });
    expect(last).toEqual({ ids: ['run_1'], nextCursor: null });
    expect((await schedules.state(t, 'n')).lastRunId).toBe('run_5');
  });

  it('makes a run once per tick id, and puts back the job of a queued run that lost it', async () => {
    const t = tenant();
    const tick = Date.UTC(2026, 2, 29, 1, 30);
    const runId = scheduleRunId(t, 'n', tick, 'tick');
    expect(runId).toBe(scheduleRunId(t, 'n', tick, 'tick'));
    expect(runId).not.toBe(scheduleRunId(t, 'n', tick, 'trigger'));
    expect(runId).not.toBe(scheduleRunId(tenant(), 'n', tick, 'tick'));
    expect(idTime(runId)).toBe(tick);
    const spec = { input: 'tick', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };
    const first = await runs.submit(t, spec, { runId, scheduleId: 'sch_n' });
    expect(first.created).toBe(true);
    expect(first.run).toMatchObject({ id: runId, scheduleId: 'sch_n' });
    const again = await runs.submit(t, spec, { runId, scheduleId: 'sch_n' });
    expect(again.created).toBe(false);
    expect(again.run.id).toBe(runId);
    // The job gone (its process died between the record and the job): the next submit adds it.
    const queue = runs.queues[0];
    await (await queue?.getJob(runId))?.remove();
    expect(await queue?.getJob(runId)).toBeUndefined();
    expect((await runs.submit(t, spec, { runId })).created).toBe(false);
    expect(await queue?.getJob(runId)).toBeDefined();
    expect((await store.get(runId))?.scheduleId).toBe('sch_n');
    await runs.cancel(t, runId);
  });
});
