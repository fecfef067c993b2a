import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { checkInvariants, RunService, RunStore } from '../src/runs/index.js';
import { SessionService } from '../src/sessions/index.js';

/**
 * BullMQ gives up on a job by itself (out of attempts, or stalled too often: its workers died), and
 * no job comes back for its run: the worker that sees the job fail ends the run through the engine
 * (`RunEngine.giveUp`), so it does not stay live with no job, and its session's next run goes on.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'give-up', onError: () => {} });
const services: RunService[] = [];
afterAll(async () => {
  await Promise.all(services.map((service) => service.close()));
  await redis.quit();
});

const body = { input: 'hi', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };
const TENANT = 'acme';

function deployment(name: string) {
  const keys = createKeys(uniquePrefix(name));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  services.push(service);
  return { keys, store, service, sessions: new SessionService({ runs: service }) };
}

describe('RunEngine.giveUp', () => {
  it("fails the run with ERR_WORKER_GAVE_UP once, and wakes its session's next run", async () => {
    const { keys, store, service, sessions } = deployment('give-up');
    const { id } = await sessions.create(TENANT);
    const { run: first } = await sessions.submit(TENANT, id, body);
    const { run: second } = await sessions.submit(TENANT, id, body);
    // The next run waits for its turn with its job delayed, as a claim that found a run ahead leaves it.
    await (await service.getJob(second.id))?.remove();
    await service.queues[0]?.add(
      'run',
      { runId: second.id, tenant: TENANT },
      { jobId: second.id, delay: 600_000 },
    );
    // BullMQ has given up on the first run's job: it is no longer on the queue.
    await (await service.getJob(first.id))?.remove();

    expect(await service.engine.giveUp(first.id, 'job stalled more than allowable limit')).toBe(true);
    const ended = await store.get(first.id);
    expect(ended?.status).toBe('failed');
    expect(ended?.error).toEqual({
      code: 'ERR_WORKER_GAVE_UP',
      message: 'The run could not be completed: job stalled more than allowable limit',
    });
    expect(await (await service.getJob(second.id))?.getState()).toBe('waiting');

    // Ended already: nothing changes, and `run.failed` stays the run's one end.
    expect(await service.engine.giveUp(first.id, 'again')).toBe(false);
    const ends = (await store.readEvents(first.id)).filter((event) => event.type === 'run.failed');
    expect(ends).toHaveLength(1);
    expect((await store.get(first.id))?.error?.message).toContain('job stalled');
    expect(await checkInvariants({ redis, keys })).toEqual([]);
  });

  it('leaves a run that has ended as it was, and wakes nothing', async () => {
    const { store, service } = deployment('give-up-ended');
    const { run } = await service.submit(TENANT, body);
    expect(await service.cancel(TENANT, run.id)).toBe('queued');
    expect(await service.engine.giveUp(run.id, 'too late')).toBe(false);
    expect((await store.get(run.id))?.status).toBe('cancelled');
  });
});
