/**
 * The engine under races (issue 29). First random interleavings of submits, answers, tool outputs,
 * children's ends, cancels, interrupts, kill -9 and expiring locks over real worker processes
 * (stress/engine-stress.ts), then each race an earlier commit fixed, as a small scenario of its
 * own. Every one ends with the invariant checker finding nothing.
 *
 * The suite runs a quick version (seed 29, 120 operations, on the cluster); `pnpm stress:engine`
 * runs 2,000 on one Redis then on a cluster. `STRESS_SEED` and `STRESS_OPS` replay a run: the seed
 * gives the same draws, not the same timing of the processes. Last, the three defects the stress
 * found (and the chaos run's stranded run), each made step by step: each failed before its fix.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { ReplayScript, RunEvent } from '@tether/protocol';
import { createRedisConnection, QUEUE_NAME } from '@tether/store/redis';
import { promoteJob, type RunJobData, RunStore } from '@tether/store/runs';
import { TenantSlots } from '@tether/store/tenant-slots';
import { type TestProcess, testRedisClusterNodes, testRedisEnv, testRedisTarget } from '@tether/testing';
import { Worker } from 'bullmq';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { crewQueue } from '../../src/attempt/crew.js';
import { loadWorkerConfig } from '../../src/config.js';
import { createProcessor } from '../../src/processor.js';
import { call, type Deployment, submitCrewParent, TENANT, until, useDeployments } from '../harness.js';
import { runEngineStress } from './engine-stress.js';

const deploy = useDeployments();

function envInteger(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new RangeError(`${name} must be an integer from 0 to ${max}, got ${raw}`);
  }
  return value;
}

const SEED = envInteger('STRESS_SEED', 29, 0xffff_ffff);
const OPS = envInteger('STRESS_OPS', 120, 100_000);

describe('the engine under random interleavings', () => {
  it(
    `seed ${SEED}, ${OPS} operations: every run ends once, and no invariant is broken`,
    async () => {
      const d = await deploy('stress');
      const report = await runEngineStress(d, {
        seed: SEED,
        ops: OPS,
        target: testRedisClusterNodes() ? 'cluster' : 'redis',
      });
      expect(
        report.violations,
        `seed ${SEED}: ${report.violations.length} violations; details in ${report.artifacts}`,
      ).toEqual([]);
    },
    // The operations, a drain of up to 80 s, a cancel of what is stuck, the checks.
    150_000 + OPS * 500,
  );
});

const sleeping = (seconds: number): ReplayScript => [
  { toolCalls: [call('bash', { command: `sleep ${seconds}` })] },
  { content: `slept ${seconds}` },
];

/** The invariant checker finds nothing once steps in flight have settled (see `expectConsistent`). */
function expectNoViolations(d: Deployment, tenantCap?: number, settleMs = 10_000): Promise<void> {
  return d.expectConsistent({ ...(tenantCap === undefined ? {} : { tenantCap }), settleMs });
}

const parkedIn = async (d: Deployment) => d.redis.zrange(d.keys.tenantSlots(TENANT).parked, '0', '-1');
const jobState = async (d: Deployment, runId: string) => (await d.service.getJob(runId))?.getState();
const typesOf = async (d: Deployment, runId: string) => (await d.store.readEvents(runId)).map((e) => e.type);

describe('races fixed earlier, each ending with the invariant checker', () => {
  it('f551fca, 65bfcc8: a cancel as a worker puts the run in its tenant line ends it at once, out of the line', async () => {
    const d = await deploy('race-cap-cancel');
    await d.startWorker(
      { TETHER_TENANT_MAX_RUNNING: '1', TETHER_WORKER_CONCURRENCY: '3' },
      { holdCappedMs: 4000 },
    );
    const first = await d.submit(sleeping(30));
    await d.waitForEvent(first, 'tool.call');
    const second = await d.submit([{ content: 'never' }]);
    await until(async () => (await parkedIn(d)).includes(second), 'the second run to wait in line');
    // The worker holds the job (the hook's window): the API leaves the run to it.
    expect(await d.service.cancel(TENANT, second)).toBe('queued');
    await d.waitForEvent(second, 'run.cancelled', 15_000);
    expect(await parkedIn(d)).toEqual([]);
    await d.service.cancel(TENANT, first);
    await d.waitForEvent(first, 'run.cancelled');
    await expectNoViolations(d, 1);
  });

  it('6405c52: a run the API cancels while it waits in its tenant line, its job delayed, leaves the line', async () => {
    const d = await deploy('race-line-cancel');
    await d.startWorker({ TETHER_TENANT_MAX_RUNNING: '1' });
    const first = await d.submit(sleeping(30));
    await d.waitForEvent(first, 'tool.call');
    const second = await d.submit([{ content: 'never' }]);
    await until(
      async () => (await parkedIn(d)).includes(second) && (await jobState(d, second)) === 'delayed',
      'the second run to wait in line, its job delayed',
    );
    expect(await d.service.cancel(TENANT, second)).toBe('queued');
    expect((await d.store.get(second))?.status).toBe('cancelled');
    expect(await parkedIn(d)).toEqual([]);
    await d.service.cancel(TENANT, first);
    await d.waitForEvent(first, 'run.cancelled');
    await expectNoViolations(d, 1);
  });

  it('c6d0a6d: a cancel whose broadcast the worker missed stops the attempt at its next lock renewal', async () => {
    const d = await deploy('race-missed-cancel');
    await d.startWorker();
    const runId = await d.submit(sleeping(30));
    await d.waitForEvent(runId, 'tool.call');
    // The flag as the API's cancel sets it, without the broadcast.
    await d.redis.hset(d.keys.run(runId).record, 'cancelRequested', '1');
    await d.waitForEvent(runId, 'run.cancelled', 10_000);
    await expectNoViolations(d);
  });

  it('4d24946: a run delayed over the cap and woken at once by its own look keeps its lock renewed', async () => {
    const d = await deploy('race-lock-tracking');
    const worker = await d.startWorker(
      { TETHER_TENANT_MAX_RUNNING: '1', TETHER_WORKER_CONCURRENCY: '2' },
      // The second run's attempt holds its job this long over the cap; the first ends meanwhile and
      // hands it the slot, so the look after the delay wakes the job at once, and the worker's
      // other slot takes it while the first processing is still finishing.
      { holdCappedMs: 3000 },
    );
    const first = await d.submit(sleeping(0.5));
    await d.waitForEvent(first, 'tool.call');
    // Its command outlives the 2 s lock: only renewals keep the attempt going.
    const second = await d.submit(sleeping(3));
    await worker.waitFor(/test hold: over the cap/);
    await d.waitForEvent(first, 'run.completed');
    await d.waitForEvent(second, 'run.completed', 20_000);
    const types = await typesOf(d, second);
    expect(types.filter((type) => type === 'attempt.started')).toHaveLength(1);
    expect(worker.output()).not.toContain('the lock on the run was not renewed in time');
    await expectNoViolations(d, 1);
  });

  it('34a10c9: a crew child timed out in its tenant line, with no attempt, leaves the line', async () => {
    const d = await deploy('race-child-timeout');
    await d.startWorker({ TETHER_TENANT_MAX_RUNNING: '1' });
    const parentId = await submitCrewParent(d, ['one', 'two'], [{ script: sleeping(30) }]);
    await until(async () => (await d.store.childIds(parentId)).length === 2, 'both children');
    const children = await d.store.childIds(parentId);
    let waiting: string | undefined;
    await until(async () => {
      waiting = (await parkedIn(d)).find((id) => children.includes(id));
      return waiting !== undefined;
    }, 'a child to wait in line behind its sibling');
    // What the parent's attempt does at the children's deadline (TETHER_CREW_CHILD_TIMEOUT_MS).
    await d.service.engine.timeOutChild(waiting as string, parentId, 1_000);
    expect((await d.store.get(waiting as string))?.status).toBe('failed');
    // Long before its sibling's command (30 s) frees the slot. (Not at once: its job's own look may
    // be taking a slot just then, and puts it back in line for a moment; see "found by the stress".)
    await until(
      async () => !(await parkedIn(d)).includes(waiting as string),
      'the child to leave the line',
      10_000,
    );
    await d.service.cancel(TENANT, parentId);
    await d.waitForEvent(parentId, 'run.cancelled');
    await expectNoViolations(d, 1);
  });

  it('5a84b52, 21723f8: cancels racing parents into waiting_for_children end every tree cancelled', async () => {
    const d = await deploy('race-crew-cancel');
    const env = { TETHER_TENANT_MAX_RUNNING: '6' };
    await Promise.all([d.startWorker(env), d.startWorker(env)]);
    const parents = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const parentId = await submitCrewParent(d, ['first', 'second'], [{ script: sleeping(20) }]);
        await d.waitForEvent(parentId, 'attempt.started', 30_000);
        // 0 to 70 ms into the attempt: before, during or just after the delegation.
        await delay(i * 10);
        await d.service.cancel(TENANT, parentId);
        return parentId;
      }),
    );
    for (const parentId of parents) await d.waitForEvent(parentId, 'run.cancelled', 15_000);
    const children = (await Promise.all(parents.map((id) => d.store.childIds(id)))).flat();
    await until(
      async () => (await d.store.getMany(children)).every((child) => child?.status === 'cancelled'),
      'every child to be cancelled',
      15_000,
    );
    await expectNoViolations(d, 6);
  });

  it('6e72f0e, 59bd721: a cancel as a run woken early goes back to sleep on its question ends it at once', async () => {
    const d = await deploy('race-sleep-cancel');
    await d.startWorker();
    const clarify: ReplayScript = [
      { toolCalls: [call('clarify', { question: 'Now?' })] },
      { content: 'never' },
    ];
    const runs = await Promise.all(
      Array.from({ length: 4 }, () => d.submit(clarify, { clarify: { timeoutMs: 120_000 } })),
    );
    await Promise.all(
      runs.map(async (runId, i) => {
        await d.waitForEvent(runId, 'clarify.requested');
        await until(async () => (await jobState(d, runId)) === 'delayed', 'the job to be delayed');
        // Woken with no answer (a lost wake's stand-in), and cancelled 0 to 15 ms later.
        await d.service.engine.promote(runId);
        await delay(i * 5);
        await d.service.cancel(TENANT, runId);
        // Far sooner than the question's two minutes.
        await d.waitForEvent(runId, 'run.cancelled', 10_000);
      }),
    );
    await expectNoViolations(d);
  });

  it('4391f54, f503c63: an answer or outputs posted the moment they are asked for never strand the run', async () => {
    const d = await deploy('race-early-answer');
    await d.startWorker();
    const asks = await d.submit(
      [{ toolCalls: [call('clarify', { question: 'Now?' })] }, { content: 'answered' }],
      {
        clarify: { timeoutMs: 120_000 },
      },
    );
    const tool = { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } };
    const calls = await d.submit(
      [{ toolCalls: [call('lookup', { q: 1 }), call('lookup', { q: 2 })] }, { content: 'looked up' }],
      { tools: [tool], toolTimeoutMs: 120_000 },
    );
    // At the requests' own broadcasts: the worker may still be moving the jobs to delayed.
    const isRequest = (event: RunEvent) =>
      event.type === 'clarify.requested' || event.type === 'tool.requested';
    const requestId = (event: RunEvent) => (event.data as { requestId: string }).requestId;
    const [question, lastCall] = await Promise.all([
      d.waitForEvent(asks, isRequest),
      d.waitForEvent(
        calls,
        (event) => isRequest(event) && (event.data as { callId: string }).callId === 'call_0_1',
      ),
    ]);
    const firstCall = (await d.store.readEvents(calls)).find(isRequest) as RunEvent;
    await Promise.all([
      d.service.answer(TENANT, asks, requestId(question), 'now'),
      d.service.postToolOutput(TENANT, calls, requestId(firstCall), 'here'),
      d.service.postToolOutput(TENANT, calls, requestId(lastCall), 'here'),
    ]);
    // Far sooner than their two-minute deadlines.
    await d.waitForEvent(asks, 'run.completed', 15_000);
    await d.waitForEvent(calls, 'run.completed', 15_000);
    await expectNoViolations(d);
  });

  it('83e1dd5: a worker paused for most of its lock hands the job back, and the run goes on to its end', async () => {
    const d = await deploy('race-late-renewal');
    const worker = await d.startWorker();
    const runId = await d.submit(sleeping(4));
    await d.waitForEvent(runId, 'tool.call');
    const lock = `${d.keys.shardPrefix(0)}:${QUEUE_NAME}:${runId}:lock`;
    await until(async () => Number(await d.redis.pttl(lock)) > 1_840, 'a fresh renewal');
    // Past the 75% after which the worker stops an attempt it could not renew, the lock still its own.
    worker.child.kill('SIGSTOP');
    await delay(1_600);
    worker.child.kill('SIGCONT');
    await d.waitForEvent(runId, 'run.completed', 30_000);
    expect(
      (await typesOf(d, runId)).filter((type) => type === 'attempt.started').length,
    ).toBeGreaterThanOrEqual(2);
    await expectNoViolations(d);
  });

  it('6a55056: a worker stopped past its lock while another takes the run over writes nothing when it wakes', async () => {
    const d = await deploy('race-lock-expiry');
    const first = await d.startWorker();
    // The call sleeps 5 s the first time, not when the next owner runs it again.
    const runId = await d.submit([
      {
        toolCalls: [
          call('bash', { command: 'if [ -e again ]; then echo again; else touch again; sleep 5; fi' }),
        ],
      },
      ...sleeping(1),
    ]);
    await d.waitForEvent(runId, 'tool.call');
    // Its lock (2 s) expires under it; the next worker's stalled check hands the job on.
    first.child.kill('SIGSTOP');
    await d.startWorker();
    const attempts = async () =>
      (await typesOf(d, runId)).filter((type) => type === 'attempt.started').length;
    await until(async () => (await attempts()) >= 2, 'the run taken over by the other worker');
    first.child.kill('SIGCONT');
    await d.waitForEvent(runId, 'run.completed', 30_000);
    await first.waitFor(/this worker lost its lock on the run|nothing to do for this run/, 15_000);
    const types = await typesOf(d, runId);
    expect(types.filter((type) => type === 'run.completed')).toHaveLength(1);
    expect(types.at(-1)).toBe('run.completed');
    await expectNoViolations(d);
  });

  it('6bb174e: a tenant slot whose lease lapsed and went to another run stops the attempt that held it', async () => {
    const d = await deploy('race-lapsed-slot');
    // A 6 s lock: the lapse below is the test's own, not a renewal late on a loaded host.
    await d.startWorker({
      TETHER_TENANT_MAX_RUNNING: '1',
      TETHER_LOCK_DURATION_MS: '6000',
      TETHER_STALLED_INTERVAL_MS: '3000',
    });
    const first = await d.submit([
      {
        toolCalls: [
          call('bash', { command: 'if [ -e started ]; then echo again; else touch started; sleep 30; fi' }),
        ],
      },
      { content: 'first done' },
    ]);
    await d.waitForEvent(first, 'tool.call');
    const second = await d.submit([{ content: 'second done' }]);
    await until(async () => (await parkedIn(d)).includes(second), 'the second run to wait for the slot');
    const slots = new TenantSlots({ redis: d.redis, keys: d.keys, cap: 1, leaseMs: 6_000 });
    // The first run's lease put in the past (a renewal that came too late), then a release drops it
    // and hands the slot on; a renewal landing in between puts the lease back: then again.
    await until(async () => {
      await d.redis.zadd(d.keys.tenantSlots(TENANT).running, 'XX', 1, first);
      return (await slots.release(TENANT, 'nobody', 'nobody')).length > 0;
    }, 'the lapsed slot to be handed on');
    await promoteJob(await d.service.getJob(second));
    await d.waitForEvent(second, 'run.completed', 20_000);
    await d.waitForEvent(first, 'run.completed', 30_000);
    await expectNoViolations(d, 1);
  });

  it('5a84b52: a child that completes as every worker is killed with -9 reaches its parent once', async () => {
    const d = await deploy('race-child-kill');
    const workers: TestProcess[] = await Promise.all([d.startWorker(), d.startWorker()]);
    const parentId = await submitCrewParent(d, ['only'], [{ script: sleeping(0.5) }]);
    const started = await d.waitForEvent(parentId, 'child.started');
    const childId = (started.data as { childRunId: string }).childRunId;
    await d.waitForEvent(
      childId,
      (event) => {
        if (event.type !== 'run.completed') return false;
        for (const worker of workers) worker.child.kill('SIGKILL');
        return true;
      },
      20_000,
    );
    await Promise.all(workers.map((worker) => worker.exited));
    await d.startWorker();
    await d.waitForEvent(parentId, 'run.completed', 30_000);
    expect((await typesOf(d, parentId)).filter((type) => type === 'child.finished')).toHaveLength(1);
    await expectNoViolations(d);
  });
});

/** A worker in this process that stops at one step of its store: see {@link workerStoppingAt}. */
interface StoppingWorker {
  /** Resolves once an attempt has reached the step, and waits there. */
  reached: Promise<void>;
  /** Lets a `claim` held at its step go on (nothing for the steps that never return). */
  release(): void;
  /** Its attempts, as the worker's lock timer sees them (`stop(runId, 'lost')`: a lock not renewed in time). */
  attempts: ReturnType<typeof createProcessor>['activeRuns'];
  /** As a kill -9: the worker goes without renewing its lock, the job stays active, its lock runs out. */
  kill(): Promise<void>;
}

/**
 * A worker in this process (the built processor, one job at a time, no tenant cap) whose store
 * stops at `step`: for good right before recording a delegation (`delegate`) or right after ending
 * a run (`finalize`), as a worker killed there would; or before its claim until `release()`
 * (`claim`), as a worker stopped there (a long pause, a starved host) would.
 */
function workerStoppingAt(d: Deployment, step: 'delegate' | 'finalize' | 'claim'): StoppingWorker {
  let reach: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const never = () => new Promise<never>(() => {});
  class StoppingStore extends RunStore {
    override async claim(...args: Parameters<RunStore['claim']>): ReturnType<RunStore['claim']> {
      if (step === 'claim') {
        reach();
        await released;
      }
      return super.claim(...args);
    }
    override async delegate(...args: Parameters<RunStore['delegate']>): ReturnType<RunStore['delegate']> {
      if (step !== 'delegate') return super.delegate(...args);
      reach();
      return never();
    }
    override async finalize(...args: Parameters<RunStore['finalize']>): ReturnType<RunStore['finalize']> {
      const ended = await super.finalize(...args);
      if (step !== 'finalize') return ended;
      reach();
      return never();
    }
  }
  const connection = createRedisConnection({
    ...testRedisTarget(),
    name: 'stopping',
    mode: 'wait',
    onError: () => {},
  });
  const config = loadWorkerConfig({
    ...testRedisEnv(),
    TETHER_QUEUE_PREFIX: d.prefix,
    TETHER_WORKSPACE_ROOT: d.workspaceRoot,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_SANDBOX: 'none',
    TETHER_LOCK_DURATION_MS: '2000',
  });
  const processor = createProcessor({
    config,
    store: new StoppingStore({ redis: connection, keys: d.keys }),
    logger: pino({ level: 'silent' }),
    shuttingDown: () => false,
    wakeSession: async () => {},
    crew: crewQueue(d.service, d.keys),
    jobs: d.service,
  });
  const worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
    connection,
    prefix: d.keys.queuePrefix,
    // As the harness's workers: a stalled check holds every other worker's off for its interval.
    lockDuration: 2_000,
    stalledInterval: 1_000,
  });
  // Its lock renewals fail once its lock is gone, and its job moves with them.
  worker.on('error', () => {});
  return {
    reached,
    release,
    attempts: processor.activeRuns,
    async kill() {
      await worker.close(true);
      connection.disconnect();
    },
  };
}

describe('found by the stress', () => {
  /**
   * A crew parent's attempt creates its children's records (`createMany`), then records the
   * delegation (`delegateRun`), then queues their jobs. A worker that died between the first two
   * steps left children no list named and no job ran: a cancel (its claim ends the run, or the
   * API's for a job back in the queue) looked for children in `childCount`/`:children`, found none,
   * and the created children stayed `queued` with no job for good (`live-run-without-job`,
   * `crew-delegation`). Seen with seed 7 and 400 operations on the cluster (a kill -9 of the
   * parent's worker, then a cancel). Now `createRun` puts a crew child on its parent's list in the
   * step that creates it, and a cancel looks at that list whatever `childCount` says.
   */
  it('a crew parent whose worker dies between creating its children and recording the delegation, then is cancelled, leaves no child queued', async () => {
    const d = await deploy('orphan-children');
    const dying = workerStoppingAt(d, 'delegate');
    try {
      const parentId = await submitCrewParent(d, ['one', 'two'], [{ script: [{ content: 'child done' }] }]);
      await dying.reached;
      await dying.kill();
      // Its job is locked: the API leaves the cancel to whoever takes the run next.
      expect(await d.service.cancel(TENANT, parentId)).toBe('running');
      await d.startWorker();
      await d.waitForEvent(parentId, 'run.cancelled', 20_000);
      await expectNoViolations(d, undefined, 3_000);
    } finally {
      await dying.kill();
    }
  });

  /**
   * A job comes back to a run that has ended: its worker ended the run (`finalizeRun`) and died, or
   * stopped past its lock, before completing the job, and BullMQ's stalled check hands the job on.
   * With `TETHER_TENANT_MAX_RUNNING`, the next attempt takes a tenant slot before its claim (which
   * would find the run ended and complete the job). Over the cap, `TenantSlotKeeper.take` used to
   * park the ended run in its tenant's line and delay its job, again at each look while the cap
   * stayed full (`job-without-live-run`). Seen with seeds 29 and 31 and 2,000 operations on one
   * Redis (a worker paused or killed right after a run's end). Now a run whose claim ends it
   * (`RunStore.claimEnds`) leaves the line and goes on to its claim without a slot. A stale owner
   * that ends the run after that look (its fenced `finalizeRun`, the parked attempt never claimed)
   * leaves the job delayed until its next look, at most the slot wait, which then finds it ended.
   */
  it('a job that comes back to an ended run while its tenant is at its cap is not parked in the line', async () => {
    const d = await deploy('ended-in-line');
    const dying = workerStoppingAt(d, 'finalize');
    try {
      const ended = await d.submit([{ content: 'ended' }]);
      await dying.reached;
      await d.startWorker({ TETHER_TENANT_MAX_RUNNING: '1' });
      // The tenant's one slot taken (the dying worker runs one job at a time: this one is the other's).
      const holder = await d.submit(sleeping(30));
      await d.waitForEvent(holder, 'tool.call');
      await dying.kill();
      await until(
        async () => ['completed', undefined].includes(await jobState(d, ended)),
        "the ended run's job to come back and complete",
        20_000,
      );
      expect(await parkedIn(d)).not.toContain(ended);
      await expectNoViolations(d, 1, 3_000).finally(() => d.service.cancel(TENANT, holder));
    } finally {
      await dying.kill();
    }
  });

  /**
   * The chaos run's "run stranded in `running` with no job at all" (made here step by step). Worker
   * A is handed the job and stops before its claim (a long pause, a starved host) past its lock;
   * BullMQ's stalled check hands the job to worker B, whose claim starts the run and its command. A
   * wakes and claims too: it becomes the run's owner without holding its job, and B's next save is
   * refused. B used to settle `lost` without handing back and complete the job, which A's stopped
   * attempt then could not hand back: the run stayed `running` with no job, and no cancel ever ended
   * it. An attempt refused as not the owner now hands the job back when the lock is still its own,
   * so the next attempt takes the run over (and here ends it, cancelled).
   */
  it('a worker that claims after its lock ran out never leaves the run running with no job', async () => {
    const d = await deploy('late-claim');
    const a = workerStoppingAt(d, 'claim');
    try {
      const runId = await d.submit(sleeping(30));
      await a.reached;
      // A's lock runs out while it waits to claim (as it would while A is stopped).
      await d.redis.del(`${d.keys.shardPrefix(0)}:${QUEUE_NAME}:${runId}:lock`);
      const b = await d.startWorker();
      await d.waitForEvent(runId, 'tool.call');
      a.release();
      await b.waitFor(/or another claimed it/, 20_000);
      // What A's lock timer does once its lock has gone unrenewed for three quarters of it.
      a.attempts.stop(runId, 'lost');
      expect(await d.service.cancel(TENANT, runId)).toBe('running');
      await d.waitForEvent(runId, 'run.cancelled', 6_000);
      await expectNoViolations(d, undefined, 3_000);
    } finally {
      await a.kill();
    }
  });
});
