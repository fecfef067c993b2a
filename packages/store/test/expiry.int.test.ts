import type { RunEvent } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { checkInvariants, RunService, RunStore } from '../src/runs/index.js';

/**
 * Expiry through the engine's steps, on one Redis and on the cluster: a claim past the deadline
 * starts nothing (and `expire` ends the run), the sweep ends the runs nobody takes up (its set of
 * deadlines in its own slot, each run by its own script), twice changes nothing, and a cancel, the
 * sweep and workers' takes racing the deadline end each run once: started before its deadline, or
 * expired and never started.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'expiry', onError: () => {} });
const services: RunService[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.close()));
  await redis.quit();
});

const body = { input: 'soon', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };

function setUp(name: string) {
  const keys = createKeys(uniquePrefix(name));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  services.push(service);
  const types = async (runId: string) => (await store.readEvents(runId)).map((e) => e.type);
  const consistent = async () => expect(await checkInvariants({ redis, keys })).toEqual([]);
  return { keys, store, service, types, consistent };
}

const until = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - Date.now())));
const timeOf = (events: RunEvent[], type: string) =>
  Date.parse(events.find((e) => e.type === type)?.at ?? '');

describe('a run with a deadline to start by', () => {
  it('is created with expiresAt, watched in the set of deadlines', async () => {
    const { keys, store, service } = setUp('expiry-create');
    const expiresAtMs = Date.now() + 60_000;
    const { run } = await service.submit('acme', body, { expiresAtMs });
    expect(run.expiresAt).toBe(new Date(expiresAtMs).toISOString());
    expect((await store.get(run.id))?.expiresAt).toBe(run.expiresAt);
    expect(Number(await redis.zscore(keys.runExpiries, run.id))).toBe(expiresAtMs);
    // A run without one is not in the set: it costs nothing.
    const plain = (await service.submit('acme', body)).run;
    expect(await redis.zscore(keys.runExpiries, plain.id)).toBeNull();
  });

  it('is not started by a claim past its deadline, and ends expired at once', async () => {
    const { store, service, types, consistent } = setUp('expiry-claim');
    const expiresAtMs = Date.now() + 200;
    const { run } = await service.submit('acme', body, { expiresAtMs });
    await until(expiresAtMs + 5);
    expect(await store.claim(run.id, 'w1:t1', 1, 'w1')).toEqual({ status: 'expire', expiresAtMs });
    const record = await store.get(run.id);
    expect(record?.status).toBe('queued');
    expect(record?.startedAt).toBeUndefined();
    // The worker's step then (`RunEngine.expire`): once.
    expect(await store.finalize(run.id, { status: 'expired', expiresAtMs })).toBe(true);
    expect(await store.finalize(run.id, { status: 'expired', expiresAtMs })).toBe(false);
    expect(await types(run.id)).toEqual(['run.queued', 'run.expired']);
    const events = await store.readEvents(run.id);
    expect(events.at(-1)?.data).toEqual({ expiresAt: new Date(expiresAtMs).toISOString() });
    expect(await store.claim(run.id, 'w1:t1', 1, 'w1')).toEqual({ status: 'expired' });
    const { runs } = await service.list('acme', { status: 'expired', limit: 10 });
    expect(runs.map((r) => r.id)).toEqual([run.id]);
    await service.engine.expireDue(); // Takes it off the set of deadlines.
    await consistent();
  });

  it('is started by a claim before its deadline, and is then no longer subject to it', async () => {
    const { keys, store, service, types } = setUp('expiry-started');
    const expiresAtMs = Date.now() + 300;
    const { run } = await service.submit('acme', body, { expiresAtMs });
    expect((await store.claim(run.id, 'w1:t1', 1, 'w1')).status).toBe('ok');
    // Queued again (a release), past the deadline: it started, so it is claimed again.
    await store.setStatus(run.id, 'w1:t1', 'queued');
    await until(expiresAtMs + 5);
    expect(await store.finalize(run.id, { status: 'expired', expiresAtMs })).toBe(false);
    expect(await service.engine.expireDue()).toEqual([]);
    expect(await redis.zscore(keys.runExpiries, run.id)).toBeNull();
    expect((await store.claim(run.id, 'w2:t2', 2, 'w2')).status).toBe('ok');
    expect(await types(run.id)).toEqual(['run.queued', 'run.started', 'attempt.started', 'attempt.started']);
  });

  it('is refused by finalize before its deadline (Redis clock)', async () => {
    const { store, service, types } = setUp('expiry-early');
    const expiresAtMs = Date.now() + 60_000;
    const { run } = await service.submit('acme', body, { expiresAtMs });
    expect(await store.finalize(run.id, { status: 'expired', expiresAtMs })).toBe(false);
    expect(await types(run.id)).toEqual(['run.queued']);
  });

  it('is ended by the sweep when nobody takes it up, queued or scheduled, its job removed; twice changes nothing', async () => {
    const { keys, store, service, types, consistent } = setUp('expiry-sweep');
    const expiresAtMs = Date.now() + 300;
    const queued = (await service.submit('acme', body, { expiresAtMs })).run;
    // Due after its deadline: it never starts.
    const scheduled = (await service.submit('acme', body, { runAtMs: expiresAtMs + 60_000, expiresAtMs }))
      .run;
    const later = (await service.submit('acme', body, { expiresAtMs: Date.now() + 60_000 })).run;
    expect(await service.engine.expireDue()).toEqual([]);
    await until(expiresAtMs + 5);
    expect((await service.engine.expireDue()).sort()).toEqual([queued.id, scheduled.id].sort());
    expect(await service.engine.expireDue()).toEqual([]);
    for (const run of [queued, scheduled]) {
      expect((await store.get(run.id))?.status).toBe('expired');
      expect(await service.getJob(run.id)).toBeUndefined();
      expect(await redis.zscore(keys.runExpiries, run.id)).toBeNull();
    }
    expect(await types(queued.id)).toEqual(['run.queued', 'run.expired']);
    expect(await types(scheduled.id)).toEqual(['run.scheduled', 'run.expired']);
    expect(await store.due(scheduled.id)).toEqual({ status: 'other' });
    expect((await store.get(later.id))?.status).toBe('queued');
    expect(await redis.zscore(keys.runExpiries, later.id)).not.toBeNull();
    await consistent();
  });

  it('a scheduled run past its deadline is not queued by start on time', async () => {
    const { store, service, types } = setUp('expiry-due');
    const runAtMs = Date.now() + 100;
    const expiresAtMs = runAtMs + 100;
    const { run } = await service.submit('acme', body, { runAtMs, expiresAtMs });
    await until(expiresAtMs + 5);
    expect(await store.due(run.id)).toEqual({ status: 'expire', expiresAtMs });
    expect(await types(run.id)).toEqual(['run.scheduled']);
  });

  it('drops the entries of runs that are gone from the set', async () => {
    const { keys, service } = setUp('expiry-gone');
    await redis.zadd(keys.runExpiries, Date.now() - 1_000, 'run_gone');
    expect(await service.engine.expireDue()).toEqual([]);
    expect(await redis.zscore(keys.runExpiries, 'run_gone')).toBeNull();
  });

  it('ends once when a cancel and the sweep race', async () => {
    const { store, service, consistent } = setUp('expiry-cancel-race');
    const expiresAtMs = Date.now() + 200;
    const ids: string[] = [];
    for (let i = 0; i < 20; i += 1) ids.push((await service.submit('acme', body, { expiresAtMs })).run.id);
    await until(expiresAtMs + 2);
    // A cancel that comes second is told the run has ended (409), as for any ended run.
    const cancel = (id: string) =>
      service
        .cancel('acme', id)
        .catch((error: { code?: string }) => expect(error.code).toBe('ERR_RUN_FINISHED'));
    await Promise.all([service.engine.expireDue(), ...ids.map(cancel)]);
    await service.engine.expireDue();
    for (const id of ids) {
      const events = (await store.readEvents(id)).map((e) => e.type);
      const ends = events.filter((type) => type === 'run.expired' || type === 'run.cancelled');
      expect(ends, id).toHaveLength(1);
      expect(events.at(-1)).toBe(ends[0]);
      expect(events).not.toContain('run.started');
      expect(['expired', 'cancelled']).toContain((await store.get(id))?.status);
    }
    await consistent();
  });

  it('racing workers that take the runs at their deadline: each started before it, or expired and never started', async () => {
    const { keys, store, service } = setUp('expiry-take-race');
    const ids: string[] = [];
    const deadlines = new Map<string, number>();
    const base = Date.now() + 300;
    for (let i = 0; i < 40; i += 1) {
      // Deadlines spread over 40 ms around the moment the takes begin.
      const expiresAtMs = base + (i % 20) * 2;
      const { run } = await service.submit('acme', body, { expiresAtMs });
      ids.push(run.id);
      deadlines.set(run.id, expiresAtMs);
    }
    await until(base + 5);
    // A worker takes each run (as an attempt does: the claim, then expire when told), as the sweep runs.
    const take = async (id: string, worker: string) => {
      const claim = await store.claim(id, `${worker}:${id}`, 1, worker);
      if (claim.status === 'expire')
        await store.finalize(id, { status: 'expired', expiresAtMs: claim.expiresAtMs });
      return claim.status;
    };
    const outcomes = await Promise.all([
      service.engine.expireDue(),
      ...ids.map((id, i) => take(id, `w${i % 4}`)),
    ]);
    await service.engine.expireDue();
    let started = 0;
    let expired = 0;
    for (const id of ids) {
      const record = await store.get(id);
      const events = await store.readEvents(id);
      const types = events.map((e) => e.type);
      const expiresAtMs = deadlines.get(id) ?? 0;
      if (record?.status === 'expired') {
        expired += 1;
        expect(types, id).toEqual(['run.queued', 'run.expired']);
        expect(record.startedAt).toBeUndefined();
        expect(timeOf(events, 'run.expired')).toBeGreaterThanOrEqual(expiresAtMs);
      } else {
        started += 1;
        expect(record?.status, id).toBe('running');
        expect(types, id).toEqual(['run.queued', 'run.started', 'attempt.started']);
        // The claim decides by Redis's clock read at its start (startedAt); the event appended after
        // the decision, in the same step, is stamped by the stream a moment later: at most at the
        // deadline's millisecond, never past it.
        expect(Date.parse(record?.startedAt ?? '')).toBeLessThan(expiresAtMs);
        expect(timeOf(events, 'run.started')).toBeLessThanOrEqual(expiresAtMs);
      }
    }
    expect(started + expired).toBe(ids.length);
    expect(outcomes.length).toBe(ids.length + 1);
    // The checker's own rule agrees (the jobs no worker holds here are other rules' business).
    const violations = await checkInvariants({ redis, keys });
    expect(violations.filter((v) => v.rule === 'run-expiry')).toEqual([]);
  });
});
