import { randomUUID } from 'node:crypto';
import { newChildRunId, newId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { type Job, Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, QUEUE_NAME } from '../src/redis/index.js';
import {
  type CheckInvariantsOptions,
  checkInvariants,
  DEFAULT_INVARIANT_GRACE_MS,
  type InvariantViolation,
  type NewRun,
  type RunJobData,
  RunService,
  RunStore,
} from '../src/runs/index.js';
import { SessionService } from '../src/sessions/index.js';
import { TenantSlots } from '../src/tenant-slots/index.js';

/**
 * The invariant checker against states built by the real services and a worker's own moves (a
 * job taken, locked, claimed, delayed, completed), on one Redis and on a Redis Cluster: nothing on
 * consistent states, then each invariant broken by hand, reported with its rule and its run.
 */
const redis = createRedisConnection({
  ...testRedisTarget(),
  name: 'invariants',
  mode: 'wait',
  onError: () => {},
});
const closing: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close();
  await redis.quit();
});

const body = { input: 'hi', model: { provider: 'replay' as const, script: [{ content: 'ok' }] } };
const TENANT = 'acme';
const CAP = 2;

/** `rule runId` of each violation, sorted: what a test expects, whatever the order of the ids. */
function found(violations: InvariantViolation[]): string[] {
  return violations.map((v) => `${v.rule} ${v.runId ?? '-'}`).sort();
}

/**
 * A deployment of its own (prefix, services, tenant slots with a cap) and a worker's hands: `start`
 * takes the next job as the worker does (active, locked by its token), takes a slot and claims the
 * run; the attempt's moves then follow the worker's settlements.
 */
function deployment() {
  const keys = createKeys(uniquePrefix('inv'));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  const sessions = new SessionService({ runs: service });
  const slots = new TenantSlots({ redis, keys, cap: CAP, leaseMs: 60_000 });
  const worker = new Worker<RunJobData>(QUEUE_NAME, null, {
    connection: redis,
    prefix: keys.queuePrefix,
    autorun: false,
    lockDuration: 60_000,
  });
  closing.push(
    () => service.close(),
    () => worker.close(),
  );
  /** Strict: no grace, and the workers' cap on running runs. */
  const check = (options: Partial<CheckInvariantsOptions> = {}) =>
    checkInvariants({ redis, keys, graceMs: 0, tenantCap: CAP, ...options });

  async function start(runId: string, parentRunId = '') {
    const token = randomUUID();
    const job = (await worker.getNextJob(token, { block: false })) as Job<RunJobData> | undefined;
    expect(job?.id).toBe(runId);
    const fence = `w1:${token}`;
    expect(await slots.take(TENANT, runId, fence)).toEqual({ held: true });
    const claim = await store.claim(runId, fence, 1, 'w1', parentRunId);
    const release = () => slots.release(TENANT, runId, fence);
    return { job: job as Job<RunJobData>, token, fence, claim, release };
  }

  /** A run submitted, taken and suspended on a question (its job delayed until the deadline, its slot given back). */
  async function suspended() {
    const { run } = await service.submit(TENANT, body);
    const attempt = await start(run.id);
    const requestId = newId('clr');
    const expiresAtMs = Date.now() + 60_000;
    await store.suspend(run.id, attempt.fence, {
      requestId,
      question: 'Which one?',
      choices: [],
      expiresAt: new Date(expiresAtMs).toISOString(),
    });
    await attempt.job.moveToDelayed(expiresAtMs, attempt.token);
    await attempt.release();
    return { runId: run.id, requestId };
  }

  /** A run submitted, taken and completed (its job completed, and so removed). */
  async function completed() {
    const { run } = await service.submit(TENANT, body);
    const attempt = await start(run.id);
    expect(await store.finalize(run.id, { status: 'completed', output: 'done' }, attempt.fence)).toBe(true);
    await attempt.job.moveToCompleted('done', attempt.token, false);
    await attempt.release();
    return run.id;
  }

  /** A session with its first run running (holding a slot) and its second in line (delayed, as `blocked`). */
  async function session() {
    const { id } = await sessions.create(TENANT);
    const { run: first } = await sessions.submit(TENANT, id, body);
    const { run: second } = await sessions.submit(TENANT, id, body);
    const running = await start(first.id);
    expect(running.claim.status).toBe('ok');
    const blocked = await start(second.id);
    expect(blocked.claim).toEqual({ status: 'wait', ahead: first.id });
    await blocked.job.moveToDelayed(Date.now() + 60_000, blocked.token);
    await blocked.release();
    return { first: first.id, second: second.id, running };
  }

  /** A crew parent delegating to two children and waiting for them (its job delayed until their deadline). */
  async function crew() {
    const { run: parent } = await service.submit(TENANT, body);
    const attempt = await start(parent.id);
    const deadlineMs = Date.now() + 60_000;
    const children: NewRun[] = [0, 1].map((index) => {
      const id = newChildRunId(parent.id);
      return {
        id,
        tenant: TENANT,
        spec: { ...body, input: `task ${index}` },
        createdAtMs: Date.now(),
        queue: keys.shardPrefix(keys.shardOf(id)),
        crew: { parentRunId: parent.id, rootRunId: parent.id, depth: 1, call: 'call_1', index, deadlineMs },
      };
    });
    await store.createMany(children);
    const tasks = children.map((child, index) => ({ id: child.id, index, goal: child.spec.input }));
    expect(
      await store.delegate(parent.id, attempt.fence, {
        call: 'call_1',
        deadlineMs,
        maxChildren: 50,
        children: tasks,
      }),
    ).toBe('recorded');
    await service.queueChildren(children);
    await attempt.job.moveToDelayed(deadlineMs, attempt.token);
    await attempt.release();
    return { parentId: parent.id, childIds: children.map((child) => child.id) };
  }

  return { keys, store, service, slots, check, start, suspended, completed, session, crew };
}

describe('checkInvariants on consistent states', () => {
  it('finds nothing in a queued run, a suspended one (then answered) and a completed one', async () => {
    const d = deployment();
    const { runId: waiting, requestId } = await d.suspended();
    const done = await d.completed();
    const { run: queued } = await d.service.submit(TENANT, body);
    expect(await (await d.service.getJob(waiting))?.getState()).toBe('delayed');
    expect(await d.service.getJob(done)).toBeUndefined();
    expect(await (await d.service.getJob(queued.id))?.getState()).toBe('waiting');
    expect(await d.check()).toEqual([]);

    await d.service.answer(TENANT, waiting, requestId, 'that one');
    expect((await d.store.get(waiting))?.status).toBe('queued');
    expect(await d.check()).toEqual([]);
  });

  it('finds nothing in a session with one run running and one in line', async () => {
    const d = deployment();
    const { first, second } = await d.session();
    expect((await d.store.getMany([first, second])).map((run) => run?.status)).toEqual(['running', 'queued']);
    expect(await d.slots.running(TENANT)).toEqual([first]);
    expect(await d.check()).toEqual([]);
  });

  it('finds nothing in a crew parent waiting on its children, before and after one of them ends', async () => {
    const d = deployment();
    const { parentId, childIds } = await d.crew();
    const [firstChild] = childIds as [string, string];
    expect((await d.store.get(parentId))?.status).toBe('waiting_for_children');
    expect(await d.check()).toEqual([]);

    const attempt = await d.start(firstChild, parentId);
    expect(attempt.claim.status).toBe('ok');
    await d.store.finalize(
      firstChild,
      { status: 'completed', output: 'done' },
      attempt.fence,
      [],
      [],
      parentId,
    );
    await attempt.job.moveToCompleted('done', attempt.token, false);
    await attempt.release();
    expect((await d.store.delegation(parentId))?.pending).toBe(1);
    expect(await d.check()).toEqual([]);
  });
});

describe('checkInvariants reports', () => {
  it('a live run whose job was deleted, and a running one whose job lost its lock (stranded)', async () => {
    const d = deployment();
    const { run: running } = await d.service.submit(TENANT, body);
    await d.start(running.id);
    const { run: queued } = await d.service.submit(TENANT, body);
    expect(await d.check()).toEqual([]);

    const queue = `${d.keys.queuePrefix}:${QUEUE_NAME}`;
    await redis.lrem(`${queue}:wait`, 0, queued.id);
    await redis.del(`${queue}:${queued.id}`);
    await redis.del(`${queue}:${running.id}:lock`);
    const violations = await d.check();
    expect(found(violations)).toEqual(
      [`live-run-without-job ${queued.id}`, `live-run-without-job ${running.id}`].sort(),
    );
    expect(violations.find((v) => v.runId === queued.id)?.detail).toMatch(/queued but it has no job/);
    expect(violations.find((v) => v.runId === running.id)?.detail).toMatch(/active with no lock.*stranded/);
    // Within the grace, a run just submitted may not have its job yet; a stranded one is never excused.
    expect(found(await d.check({ graceMs: 60_000 }))).toEqual([`live-run-without-job ${running.id}`]);
  });

  it('a job waiting for a run that has ended', async () => {
    const d = deployment();
    const done = await d.completed();
    expect(await d.check()).toEqual([]);

    await d.service.queues[0]?.add('run', { runId: done, tenant: TENANT }, { jobId: done });
    const violations = await d.check();
    expect(found(violations)).toEqual([`job-without-live-run ${done}`]);
    expect(violations[0]?.detail).toMatch(/a job waiting .* which is completed/);
  });

  it('tenant slots counted for runs that do not hold them, and over the cap', async () => {
    const d = deployment();
    const done = await d.completed();
    const { run: queued } = await d.service.submit(TENANT, body);
    expect(await d.check()).toEqual([]);

    const slots = d.keys.tenantSlots(TENANT);
    const lease = Date.now() + 60_000;
    // An ended run's slot, and an attempt's slot for a run no attempt claimed.
    await redis.zadd(slots.running, lease, done, lease, queued.id);
    await redis.hset(slots.holders, done, 'w9:tok_a', queued.id, 'w9:tok_b');
    expect(found(await d.check())).toEqual([`tenant-slot ${done}`, `tenant-slot ${queued.id}`].sort());
    expect(found(await d.check({ tenantCap: 1 }))).toEqual(
      ['tenant-slot -', `tenant-slot ${done}`, `tenant-slot ${queued.id}`].sort(),
    );
    // A lease that ran out counts for nothing: the next script drops it.
    await redis.zadd(slots.running, Date.now() - 1, done, Date.now() - 1, queued.id);
    expect(await d.check()).toEqual([]);
  });

  it('a clarify request answered while its run still sleeps on it, once past the grace', async () => {
    const d = deployment();
    const { runId, requestId } = await d.suspended();
    expect(await d.check()).toEqual([]);

    // Resolved behind the steps' back: the state changed, the job left asleep.
    await redis.hset(d.keys.run(runId).waitpoint, `s:${requestId}`, 'answered', 'pending', 0);
    // `clarify.requested` was its last event just now: a step in flight, within the grace.
    expect(await d.check({ graceMs: DEFAULT_INVARIANT_GRACE_MS })).toEqual([]);
    const later = Date.now() + DEFAULT_INVARIANT_GRACE_MS;
    const violations = await d.check({ graceMs: DEFAULT_INVARIANT_GRACE_MS, now: later });
    expect(found(violations)).toEqual([`waitpoint-resolved ${runId}`]);
    expect(violations[0]?.detail).toMatch(`no request of its waitpoint ${requestId} is pending`);
  });

  it('two runs of a session active at once', async () => {
    const d = deployment();
    const { second } = await d.session();
    expect(await d.check()).toEqual([]);

    // The second run claimed past the first, as if the session's line were not checked.
    expect(await d.slots.take(TENANT, second, 'w2:tok_c')).toEqual({ held: true });
    await redis.hset(d.keys.run(second).record, 'status', 'running', 'owner', 'w2:tok_c');
    const violations = await d.check();
    expect(found(violations)).toEqual([`session-active ${second}`]);
    expect(violations[0]?.detail).toMatch(/active \(running\) but not the head of its queue/);
  });

  it('a waitpoint whose pending count disagrees with its requests', async () => {
    const d = deployment();
    const { parentId } = await d.crew();
    expect(await d.check()).toEqual([]);

    await redis.hincrby(d.keys.run(parentId).waitpoint, 'pending', 1);
    const violations = await d.check();
    expect(found(violations)).toEqual([`waitpoint-pending ${parentId}`]);
    expect(violations[0]?.detail).toMatch(/has pending 3, but 2 of its requests are pending/);
  });

  it("a delegation that holds another run's result under a child's", async () => {
    const d = deployment();
    const { parentId, childIds } = await d.crew();
    const [childId] = childIds;
    const result = {
      index: 0,
      runId: 'run_other',
      status: 'completed',
      summary: 's',
      usage: {},
      durationMs: 1,
    };
    await redis.hset(d.keys.run(parentId).waitpointResults, childId as string, JSON.stringify(result));
    const violations = await d.check();
    expect(found(violations)).toContain(`crew-delegation ${parentId}`);
    expect(violations.find((v) => v.rule === 'crew-delegation')?.detail).toMatch(
      `has a result of run_other, not its child ${childId}`,
    );
  });
});
