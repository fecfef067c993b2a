import { newChildRunId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, QUEUE_NAME } from '../src/redis/index.js';
import { checkInvariants, type NewRun, type RunJobData, RunService, RunStore } from '../src/runs/index.js';

/**
 * A cancel ended outside an attempt (the API's, or a parent's end cancelling its children) is
 * several steps: the job off the queue, `run.cancelled`, the tenant's line, the session's next run,
 * the children. A process that died in between left a run live with no job (stranded for good), or
 * ended with its children still waiting. The run is among the cancels in flight until the last
 * step, and `recoverCancels` (a worker's timer) does every step again for one left there.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'cancel-recovery', onError: () => {} });
const services: { close(): Promise<unknown> }[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.close()));
  await redis.quit();
});

const body = { input: 'hi', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };
const TENANT = 'acme';
const A_MINUTE_AGO = () => Date.now() - 60_000;

function deployment(name: string) {
  const keys = createKeys(uniquePrefix(name));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  services.push(service);
  const cancelledEvents = async (runId: string) =>
    (await store.readEvents(runId)).filter((event) => event.type === 'run.cancelled').length;
  return { keys, store, service, cancelledEvents };
}

describe('RunService.recoverCancels', () => {
  it('finishes a cancel whose process died once the job was off the queue: cancelled once, out of its line', async () => {
    const { keys, store, service, cancelledEvents } = deployment('cancel-died');
    const { run } = await service.submit(TENANT, body);
    await redis.zadd(keys.tenantSlots(TENANT).parked, 1, run.id);
    // What the API did before it died: the flag, the run among the cancels in flight, the job removed.
    await store.requestCancel(run.id);
    await redis.zadd(keys.cancelsInFlight, A_MINUTE_AGO(), run.id);
    await (await service.getJob(run.id))?.remove();
    const stranded = await checkInvariants({ redis, keys, graceMs: 0 });
    expect(stranded.map((v) => v.rule)).toContain('live-run-without-job');

    // Too recent to be left unfinished: nothing yet.
    expect(await service.engine.recoverCancels(120_000)).toEqual([]);
    expect(await service.engine.recoverCancels(10_000)).toEqual([run.id]);
    expect((await store.get(run.id))?.status).toBe('cancelled');
    expect(await cancelledEvents(run.id)).toBe(1);
    expect(await redis.zrange(keys.tenantSlots(TENANT).parked, 0, -1)).toEqual([]);
    expect(await redis.zcard(keys.cancelsInFlight)).toBe(0);
    expect(await checkInvariants({ redis, keys })).toEqual([]);
    // Nothing left: a second look changes nothing.
    expect(await service.engine.recoverCancels(0)).toEqual([]);
    expect(await cancelledEvents(run.id)).toBe(1);
  });

  it("finishes a parent's cancel that died after ending the parent: its children, queued, are cancelled", async () => {
    const { keys, store, service, cancelledEvents } = deployment('cancel-died-parent');
    const { run: parent } = await service.submit(TENANT, body);
    await store.claim(parent.id, 'w1:t1', 1, 'w1');
    const children: NewRun[] = [0, 1].map((index) => ({
      id: newChildRunId(parent.id),
      tenant: TENANT,
      spec: { input: `goal ${index}` },
      createdAtMs: Date.now(),
      queue: keys.shardPrefix(0),
      crew: { parentRunId: parent.id, rootRunId: parent.id, depth: 1, call: 'c', index, deadlineMs: 0 },
    }));
    await store.createMany(children);
    await store.delegate(parent.id, 'w1:t1', {
      call: 'c',
      deadlineMs: Date.now() + 60_000,
      maxChildren: 10,
      children: children.map((child, index) => ({ id: child.id, index, goal: child.spec.input })),
    });
    await service.queueChildren(children);
    // The parent, waiting for its children, cancelled by the API, which died after ending it.
    await store.requestCancel(parent.id);
    await redis.zadd(keys.cancelsInFlight, A_MINUTE_AGO(), parent.id);
    await (await service.getJob(parent.id))?.remove();
    await store.finalize(parent.id, { status: 'cancelled', reason: 'cancelled by request' });

    expect(await service.engine.recoverCancels(10_000)).toEqual([parent.id]);
    for (const child of children) {
      expect(await store.get(child.id)).toMatchObject({ status: 'cancelled' });
      expect(await service.getJob(child.id)).toBeUndefined();
      expect((await store.readEvents(child.id)).at(-1)?.data).toEqual({ reason: 'its parent run ended' });
    }
    expect(await cancelledEvents(parent.id)).toBe(1);
    expect(await redis.zcard(keys.cancelsInFlight)).toBe(0);
    expect(await checkInvariants({ redis, keys })).toEqual([]);
  });

  it('leaves a run whose job a worker holds to that worker, and forgets a run that is gone', async () => {
    const { keys, store, service } = deployment('cancel-left');
    const { run } = await service.submit(TENANT, body);
    // A worker took the job: it is active, locked by the worker's token.
    const worker = new Worker<RunJobData>(QUEUE_NAME, null, {
      connection: redis,
      prefix: keys.queuePrefix,
      autorun: false,
      lockDuration: 60_000,
    });
    services.push(worker);
    expect((await worker.getNextJob('w9-token', { block: false }))?.id).toBe(run.id);
    await store.requestCancel(run.id);
    await redis.zadd(keys.cancelsInFlight, A_MINUTE_AGO(), run.id, A_MINUTE_AGO(), 'run_gone');
    expect((await service.engine.recoverCancels(10_000)).sort()).toEqual([run.id, 'run_gone'].sort());
    expect(await redis.zcard(keys.cancelsInFlight)).toBe(0);
    // Not ended here: the worker's attempt sees the flag and ends it.
    expect((await store.get(run.id))?.status).toBe('queued');
  });
});
