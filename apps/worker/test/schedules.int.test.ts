/**
 * Schedules fired by a worker process: BullMQ's job scheduler makes one job per tick and the
 * worker submits the run. Each overlap policy with runs that stay live (waiting on a question),
 * pause and resume, a trigger, a tick taken twice making one run, a second-resolution cron, and
 * catch-up after a full stop (`one` fires the missed tick once, `none` skips it). One deployment
 * and one worker for the file; each test its own schedules. The kill -9 of a worker among three
 * is schedule-faults.int.test.ts (serial).
 */

import { idTime, type RunEvent, type RunEventType } from '@tether/protocol';
import type { StoredBody } from '@tether/store/runs';
import { type ScheduleRecord, ScheduleStore, scheduleIntervalMs } from '@tether/store/schedules';
import { SessionService } from '@tether/store/sessions';
import { WebhookStore } from '@tether/store/webhooks';
import type { TestProcess } from '@tether/testing';
import { freePort } from '@tether/testing/scripts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createDeployment, type Deployment, TENANT, until } from './harness.js';

let d: Deployment;
let schedules: ScheduleStore;
let worker: TestProcess;
/** The worker's metrics port (TETHER_METRICS_PORT). */
let metricsPort: number;

/** The file's worker (started again after a full stop, on the same metrics port). */
const startWorker = () =>
  d.startWorker({ TETHER_SCHEDULE_CATCH_UP_GRACE_MS: '1500', TETHER_METRICS_PORT: String(metricsPort) });

/** The worker's count of firings that ended `outcome` (0 before the first). */
async function firings(outcome: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`tether_schedule_firings_total{outcome="${outcome}"} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

/** A run that answers at once. */
const quick: StoredBody = { input: 'tick', model: { provider: 'replay', script: [{ content: 'ok' }] } };
/** A run that stays live: it waits on a question for a minute. */
const waiting: StoredBody = {
  input: 'tick',
  model: {
    provider: 'replay',
    script: [
      { toolCalls: [call('clarify', { question: 'Which?', choices: ['a', 'b'] })] },
      { content: 'done' },
    ],
  },
  clarify: { timeoutMs: 60_000 },
};

/** Adds a schedule and starts its job scheduler, as the API does. */
async function add(name: string, fields: Partial<ScheduleRecord> = {}): Promise<ScheduleRecord> {
  const schedule: ScheduleRecord = {
    name,
    every: '1s',
    timezone: 'UTC',
    overlap: 'enqueue',
    catchUp: 'one',
    paused: false,
    spec: quick,
    createdAt: Date.now(),
    updatedAt: Date.now(),
    ...fields,
  };
  expect(await schedules.create(TENANT, schedule)).toBe('ok');
  await schedules.arm(TENANT, schedule, scheduleIntervalMs(schedule));
  return schedule;
}

/** The runs a schedule made, oldest tick first. */
async function runsOf(name: string): Promise<string[]> {
  return (await schedules.runIds(TENANT, name, { limit: 1_000 })).ids.reverse();
}

const untilRuns = (name: string, count: number, timeoutMs = 20_000) =>
  until(async () => (await runsOf(name)).length >= count, `${count} runs of ${name}`, timeoutMs);

const eventsOf = async (runId: string, type: RunEventType): Promise<RunEvent[]> =>
  (await d.store.readEvents(runId)).filter((event) => event.type === type);

describe('schedules fired by a worker', () => {
  beforeAll(async () => {
    d = await createDeployment('schedules');
    schedules = new ScheduleStore({ redis: d.redis, keys: d.keys });
    metricsPort = await freePort();
    worker = await startWorker();
  });
  afterAll(async () => {
    await schedules.close();
    await d.close();
  });

  it('fires each tick once, with scheduleId and schedule.fired first after run.queued', async () => {
    await add('every-second');
    await untilRuns('every-second', 3);
    await schedules.disarm(TENANT, 'every-second');
    const ids = await runsOf('every-second');
    const ticks = ids.map((id) => idTime(id) as number);
    expect(new Set(ticks).size).toBe(ticks.length);
    for (let i = 1; i < ticks.length; i++)
      expect((ticks[i] as number) - (ticks[i - 1] as number)).toBe(1_000);
    const first = ids[0] as string;
    const record = await d.store.get(first);
    expect(record?.scheduleId).toBe('sch_every-second');
    await d.waitForEvent(first, 'run.completed');
    const types = (await d.store.readEvents(first)).map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(['run.queued', 'schedule.fired']);
    expect((await eventsOf(first, 'schedule.fired'))[0]?.data).toEqual({
      scheduleId: 'sch_every-second',
      name: 'every-second',
      tickAt: new Date(ticks[0] as number).toISOString(),
    });
    expect((await schedules.state(TENANT, 'every-second')).lastRunId).toBe(ids.at(-1));
  });

  it('with a second-resolution cron, fires on its seconds', async () => {
    await add('cron-seconds', { every: undefined, cron: '*/2 * * * * *' });
    await untilRuns('cron-seconds', 3);
    await schedules.disarm(TENANT, 'cron-seconds');
    const ticks = (await runsOf('cron-seconds')).map((id) => idTime(id) as number);
    for (const tick of ticks) expect(tick % 2_000).toBe(0);
    for (let i = 1; i < ticks.length; i++)
      expect((ticks[i] as number) - (ticks[i - 1] as number)).toBe(2_000);
  });

  it('keeps to each overlap policy while the last run is live', async () => {
    await Promise.all([
      add('skip', { overlap: 'skip', spec: waiting }),
      add('enqueue', { overlap: 'enqueue', spec: waiting }),
      add('cancel', { overlap: 'cancel_previous', spec: waiting }),
    ]);
    await untilRuns('enqueue', 4);
    await untilRuns('cancel', 4);
    for (const name of ['skip', 'enqueue', 'cancel']) await schedules.disarm(TENANT, name);

    // skip: one run, told of each tick it stood in the way of.
    const [skipped, ...none] = await runsOf('skip');
    expect(none).toEqual([]);
    await until(
      async () => (await eventsOf(skipped as string, 'schedule.skipped')).length >= 2,
      'skips told',
    );
    expect((await eventsOf(skipped as string, 'schedule.skipped'))[0]?.data).toMatchObject({
      scheduleId: 'sch_skip',
      reason: 'overlap',
    });
    expect((await schedules.state(TENANT, 'skip')).lastSkippedAt).toBeGreaterThan(0);
    expect((await d.store.get(skipped as string))?.status).not.toBe('cancelled');

    // enqueue: a run per tick, none cancelled.
    for (const runId of await runsOf('enqueue')) {
      expect((await d.store.get(runId))?.status).not.toBe('cancelled');
    }
    // cancel_previous: each run cancelled by the next tick's; the last one live.
    const cancelRuns = await runsOf('cancel');
    for (const runId of cancelRuns.slice(0, -1)) {
      await until(async () => (await d.store.get(runId))?.status === 'cancelled', `${runId} cancelled`);
    }
    expect((await d.store.get(cancelRuns.at(-1) as string))?.status).not.toBe('cancelled');
    for (const name of ['skip', 'enqueue', 'cancel'])
      for (const runId of await runsOf(name)) await d.service.cancel(TENANT, runId).catch(() => undefined);
  });

  it("records schedule.fired and schedule.skipped deliveries for the tenant's webhook endpoints", async () => {
    const webhooks = new WebhookStore({ redis: d.redis, keys: d.keys });
    const endpoint = await webhooks.create(TENANT, {
      url: 'https://hooks.example.invalid/tether',
      events: ['schedule.fired', 'schedule.skipped'],
      secret: 'sealed',
    });
    if (endpoint === 'limit') throw new Error('no room for an endpoint');
    try {
      await add('hooked', { overlap: 'skip', spec: waiting });
      await untilRuns('hooked', 1);
      const [runId] = await runsOf('hooked');
      await until(async () => (await eventsOf(runId as string, 'schedule.skipped')).length >= 1, 'a skip');
      await schedules.disarm(TENANT, 'hooked');
      await until(async () => {
        const { deliveries } = await webhooks.deliveries(TENANT, endpoint.id, { limit: 20 });
        const types = new Set(deliveries.map((delivery) => `${delivery.type} ${delivery.runId}`));
        return types.has(`schedule.fired ${runId}`) && types.has(`schedule.skipped ${runId}`);
      }, 'both deliveries recorded');
      await d.service.cancel(TENANT, runId as string);
    } finally {
      await webhooks.delete(TENANT, endpoint.id);
      await webhooks.close();
    }
  });

  it('fires nothing while paused, again once resumed; a trigger fires once even if taken twice', async () => {
    const schedule = await add('pausable');
    await untilRuns('pausable', 2);
    // Paused as the API pauses: the record, then the job scheduler.
    await schedules.replace(TENANT, { ...schedule, paused: true });
    await schedules.disarm(TENANT, 'pausable');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = (await runsOf('pausable')).length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await runsOf('pausable')).length).toBe(before);
    expect(await schedules.next(TENANT, 'pausable')).toBeUndefined();

    // A trigger of a paused schedule fires; the same firing taken again makes no second run.
    const at = Date.now();
    const runId = await schedules.trigger(TENANT, { ...schedule, paused: true }, at);
    await d.waitForEvent(runId, 'run.completed');
    await schedules.queue.add(
      'trigger',
      { tenant: TENANT, name: 'pausable', triggerAt: at },
      { jobId: 'again' },
    );
    await until(
      async () => (await schedules.queue.getJob('again'))?.finishedOn !== undefined,
      'the second job taken',
    );
    expect((await schedules.queue.getJob('again'))?.returnvalue).toBe('duplicate');
    // Counted where decided: this one worker fired every tick so far, and saw the duplicate.
    expect(await firings('duplicate')).toBe(1);
    expect(await firings('fired')).toBeGreaterThanOrEqual(before + 1);
    expect(await firings('skipped_overlap')).toBeGreaterThanOrEqual(2);
    expect(await runsOf('pausable')).toHaveLength(before + 1);
    expect((await eventsOf(runId, 'schedule.fired'))[0]?.data).toMatchObject({ trigger: true });
    const all = await d.store.list(TENANT, { limit: 100 });
    expect(all.runs.filter((run) => run.id === runId)).toHaveLength(1);

    await schedules.replace(TENANT, { ...schedule, paused: false });
    await schedules.arm(TENANT, schedule, 1_000);
    await untilRuns('pausable', before + 3);
    await schedules.disarm(TENANT, 'pausable');
  });

  it('after a full stop fires a missed tick once with catchUp "one", and skips it with "none"', async () => {
    await add('catch-one', { catchUp: 'one' });
    await add('catch-none', { catchUp: 'none' });
    await untilRuns('catch-one', 1);
    await untilRuns('catch-none', 1);
    await worker.stop('SIGTERM');
    const stoppedAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const restartedAt = Date.now();
    worker = await startWorker();
    await untilRuns('catch-one', (await runsOf('catch-one')).length + 2);
    const late = async (name: string) =>
      (await runsOf(name))
        .map((id) => idTime(id) as number)
        .filter((t) => t > stoppedAt && t < restartedAt - 1_000);
    // The ticks while no worker ran were one job: one run for them.
    expect(await late('catch-one')).toHaveLength(1);
    await untilRuns('catch-none', (await runsOf('catch-none')).length + 1);
    expect(await late('catch-none')).toHaveLength(0);
    expect((await schedules.state(TENANT, 'catch-none')).lastSkippedAt).toBeGreaterThanOrEqual(restartedAt);
    await schedules.disarm(TENANT, 'catch-one');
    await schedules.disarm(TENANT, 'catch-none');
  });

  it("makes each firing a message of the schedule's session, and ends as failed once it is gone", async () => {
    const sessions = new SessionService({ runs: d.service });
    const session = await sessions.create(TENANT, {});
    await add('chatty', { sessionId: session.id });
    await untilRuns('chatty', 2);
    await schedules.disarm(TENANT, 'chatty');
    const ids = await runsOf('chatty');
    for (const runId of ids) {
      expect(runId.endsWith(session.id.slice(-16))).toBe(true);
      await d.waitForEvent(runId, 'run.completed');
      expect((await d.store.get(runId))?.sessionId).toBe(session.id);
    }
    const record = await sessions.record(TENANT, session.id);
    expect(record.runs).toBe(ids.length);
    expect(record.lastRunId).toBe(ids.at(-1));
    // The session deleted: a trigger's firing is refused, not retried, and makes no run.
    await sessions.delete(TENANT, session.id);
    const failedBefore = await firings('failed');
    const runId = await schedules.trigger(TENANT, (await schedules.get(TENANT, 'chatty')) as ScheduleRecord);
    await until(async () => (await firings('failed')) === failedBefore + 1, 'the firing refused');
    expect(await d.store.get(runId)).toBeUndefined();
  });

  it('makes no run for a deleted schedule, and removes its job scheduler', async () => {
    const schedule = await add('deleted');
    await untilRuns('deleted', 1);
    // Deleted under the job scheduler (as if its removal had been lost): the next tick removes it.
    await d.redis.hdel(d.keys.schedules(TENANT).index, 'deleted');
    await until(
      async () => (await schedules.next(TENANT, schedule.name)) === undefined,
      'the scheduler gone',
    );
  });
});
