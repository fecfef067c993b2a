import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, QUEUE_NAME } from '../src/redis/index.js';
import { RunService, RunStore } from '../src/runs/index.js';

/**
 * Delayed runs through the engine's steps, on one Redis and on the cluster: created `scheduled`
 * with a delayed BullMQ job, given a new time (the record and the job's delay together), started
 * on time only (`start on time` queues it, a claim never takes a scheduled run), cancelled and
 * deleted while scheduled.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'scheduled', onError: () => {} });
const services: RunService[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.close()));
  await redis.quit();
});

const body = { input: 'later', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };

function setUp(name: string) {
  const keys = createKeys(uniquePrefix(name));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  services.push(service);
  /** When the run's job comes up (epoch ms), from BullMQ's delayed set; undefined when it is not delayed. */
  const jobDue = async (runId: string) => {
    const run = await store.get(runId);
    const score = await redis.zscore(`${run?.queue}:${QUEUE_NAME}:delayed`, runId);
    return score === null ? undefined : Math.floor(Number(score) / 0x1000);
  };
  const state = async (runId: string) => (await service.getJob(runId))?.getState();
  return { keys, store, service, jobDue, state };
}

describe('a delayed run', () => {
  it('is created scheduled, with run.scheduled and its job delayed until runAt', async () => {
    const { store, service, jobDue } = setUp('scheduled-create');
    const runAtMs = Date.now() + 60_000;
    const { run } = await service.submit('acme', body, { runAtMs });
    expect(run.status).toBe('scheduled');
    expect(run.runAt).toBe(new Date(runAtMs).toISOString());
    expect((await store.get(run.id))?.status).toBe('scheduled');
    expect((await store.readEvents(run.id)).map((e) => [e.type, e.data])).toEqual([
      ['run.scheduled', { runAt: new Date(runAtMs).toISOString() }],
    ]);
    expect(Math.abs((await jobDue(run.id)) - runAtMs)).toBeLessThan(1_000);
    expect((await service.getJob(run.id))?.data.scheduled).toBe(true);
    // Listed as such.
    const { runs } = await service.list('acme', { status: 'scheduled', limit: 10 });
    expect(runs.map((r) => r.id)).toEqual([run.id]);
  });

  it('starts at once when runAt has passed', async () => {
    const { service, state } = setUp('scheduled-past');
    const { run } = await service.submit('acme', body, { runAtMs: Date.now() - 5_000 });
    expect(run.status).toBe('queued');
    expect(await state(run.id)).toBe('waiting');
    expect((await service.getJob(run.id))?.data.scheduled).toBeUndefined();
  });

  it('is never claimed while scheduled, and is queued by start on time only once its time has come', async () => {
    const { store, service } = setUp('scheduled-claim');
    const runAtMs = Date.now() + 400;
    const { run } = await service.submit('acme', body, { runAtMs });
    expect(await store.claim(run.id, 'w1:t1', 1, 'w1')).toEqual({ status: 'early', runAtMs });
    expect(await store.due(run.id)).toEqual({ status: 'early', runAtMs });
    expect((await store.get(run.id))?.status).toBe('scheduled');
    await new Promise((resolve) => setTimeout(resolve, runAtMs - Date.now() + 20));
    expect(await store.due(run.id)).toEqual({ status: 'due' });
    expect(await store.due(run.id)).toEqual({ status: 'other' });
    expect((await store.claim(run.id, 'w1:t1', 1, 'w1')).status).toBe('ok');
    const events = (await store.readEvents(run.id)).map((e) => e.type);
    expect(events).toEqual(['run.scheduled', 'run.queued', 'run.started', 'attempt.started']);
    const started = Date.parse((await store.get(run.id))?.startedAt ?? '');
    expect(started).toBeGreaterThanOrEqual(runAtMs);
  });

  it('takes a new time: the record, run.scheduled and the job delay together', async () => {
    const { store, service, jobDue } = setUp('scheduled-move');
    const { run } = await service.submit('acme', body, { runAtMs: Date.now() + 60_000 });
    const laterMs = Date.now() + 120_000;
    const moved = await service.reschedule('acme', run.id, laterMs);
    expect(moved.status).toBe('scheduled');
    expect(moved.runAt).toBe(new Date(laterMs).toISOString());
    expect(Math.abs((await jobDue(run.id)) - laterMs)).toBeLessThan(1_000);
    const events = await store.readEvents(run.id);
    expect(events.at(-1)).toMatchObject({ type: 'run.scheduled', data: { runAt: moved.runAt } });
    // A job that came up at the old time (a worker took it as the time moved) waits for the new one.
    expect(await store.due(run.id)).toEqual({ status: 'early', runAtMs: laterMs });
    // Earlier: a time past starts it now.
    await service.reschedule('acme', run.id, Date.now() - 1_000);
    expect((await jobDue(run.id)) ?? 0).toBeLessThanOrEqual(Date.now());
  });

  it('refuses a new time once not scheduled, and for another tenant', async () => {
    const { store, service } = setUp('scheduled-refuse');
    const { run } = await service.submit('acme', body);
    await expect(service.reschedule('acme', run.id, Date.now() + 60_000)).rejects.toMatchObject({
      code: 'ERR_RUN_NOT_SCHEDULED',
      statusCode: 409,
    });
    const later = (await service.submit('acme', body, { runAtMs: Date.now() + 60_000 })).run;
    await expect(service.reschedule('globex', later.id, Date.now() + 1_000)).rejects.toMatchObject({
      code: 'ERR_RUN_NOT_FOUND',
    });
    await store.requestCancel(later.id);
    await expect(service.reschedule('acme', later.id, Date.now() + 1_000)).rejects.toMatchObject({
      code: 'ERR_RUN_NOT_SCHEDULED',
      message: expect.stringContaining('being cancelled'),
    });
    expect((await store.readEvents(later.id)).map((e) => e.type)).toEqual(['run.scheduled']);
  });

  it('is cancelled at once, its job removed', async () => {
    const { store, service, state } = setUp('scheduled-cancel');
    const { run } = await service.submit('acme', body, { runAtMs: Date.now() + 60_000 });
    expect(await state(run.id)).toBe('delayed');
    expect(await service.cancel('acme', run.id)).toBe('scheduled');
    expect((await store.get(run.id))?.status).toBe('cancelled');
    expect(await service.getJob(run.id)).toBeUndefined();
    expect((await store.readEvents(run.id)).map((e) => e.type)).toEqual(['run.scheduled', 'run.cancelled']);
  });

  it('is deleted while scheduled: cancelled, its job and keys gone', async () => {
    const { keys, store, service } = setUp('scheduled-delete');
    const { run } = await service.submit('acme', body, { runAtMs: Date.now() + 60_000 });
    await service.delete('acme', run.id);
    expect(await store.get(run.id)).toBeUndefined();
    expect(await service.getJob(run.id)).toBeUndefined();
    expect(await redis.zscore(keys.tenantRuns('acme'), run.id)).toBeNull();
  });
});
