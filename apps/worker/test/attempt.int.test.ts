import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { newChildRunId, type ReplayScript, TetherError } from '@tether/protocol';
import { QUEUE_NAME } from '@tether/store/redis';
import {
  backoffStrategy,
  RunEngine,
  type RunJobData,
  RunService,
  RunStore,
  type StoredBody,
} from '@tether/store/runs';
import { testRedisUrl } from '@tether/testing';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { claimAttempt } from '../src/attempt/claim.js';
import type { AttemptContext } from '../src/attempt/context.js';
import { crewQueue } from '../src/attempt/crew.js';
import { prepareAttempt } from '../src/attempt/prepare.js';
import { settleOutcome } from '../src/attempt/settle.js';
import { loadWorkerConfig } from '../src/config.js';
import { createProcessor } from '../src/processor.js';
import { withDefaultHooks } from '../src/worker-hooks.js';
import { call, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const logger = pino({ level: 'silent' });

function configFor(d: { prefix: string; workspaceRoot: string }) {
  return loadWorkerConfig({
    REDIS_URL: testRedisUrl(),
    TETHER_QUEUE_PREFIX: d.prefix,
    TETHER_WORKSPACE_ROOT: d.workspaceRoot,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_SANDBOX: 'none',
    TETHER_WORKER_ID: 'w1',
  });
}

/** A BullMQ worker in this process running the real processor on `store`. */
function inProcessWorker(
  d: { prefix: string; workspaceRoot: string; keys: RunService['store']['keys'] },
  store: RunStore,
) {
  const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  const runs = new RunService({ redis: store.redis, keys: store.keys, store });
  const processor = createProcessor({
    config: configFor(d),
    store,
    logger,
    shuttingDown: () => false,
    wakeSession: async () => {},
    crew: crewQueue(runs, store.keys),
    jobs: runs,
  });
  const worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
    connection,
    prefix: d.keys.queuePrefix,
    settings: { backoffStrategy },
  });
  closers.push(
    () => connection.quit(),
    () => worker.close(),
  );
  return worker;
}

/** The context the processor would give the steps, for a job taken by hand. */
async function contextFor(
  d: Awaited<ReturnType<typeof deploy>>,
  body: Partial<StoredBody> & { script?: ReplayScript } = {},
): Promise<AttemptContext> {
  const { script = [{ content: 'done' }], ...extra } = body;
  const runId = await d.submit(script, extra);
  const job = (await d.service.getJob(runId)) as Job<RunJobData>;
  return {
    job,
    token: undefined,
    runId,
    attempt: 1,
    fence: 'w1:t1',
    config: configFor(d),
    store: d.store,
    engine: new RunEngine({ store: d.store, jobs: d.service }),
    log: logger,
    wakeSession: async () => {},
    parentRunId: undefined,
    crew: crewQueue(d.service, d.keys),
    hooks: withDefaultHooks(),
  };
}

describe('claimAttempt', () => {
  it('takes the run and hands on its spec; a run that is gone needs nothing', async () => {
    const d = await deploy('claim');
    const ctx = await contextFor(d);
    expect(await claimAttempt(ctx)).toMatchObject({ spec: { input: 'test run' }, checkpoint: undefined });
    expect((await d.store.get(ctx.runId))?.owner).toBe('w1:t1');
    expect(await claimAttempt({ ...ctx, runId: 'run_gone' })).toEqual({
      kind: 'lost',
      why: 'the run is missing',
      handBack: false,
    });
  });

  it('ends a run whose cancel was requested as cancelled, and fails a run without a spec', async () => {
    const d = await deploy('claim-ends');
    const cancelled = await contextFor(d);
    await d.store.requestCancel(cancelled.runId);
    expect(await claimAttempt(cancelled)).toEqual({ kind: 'cancelled' });

    const specless = await contextFor(d);
    await d.redis.del(d.keys.run(specless.runId).spec);
    expect(await claimAttempt(specless)).toMatchObject({
      kind: 'failed',
      retryable: false,
      error: { code: 'ERR_WORKER_SPEC_MISSING' },
    });
  });
});

describe('prepareAttempt', () => {
  it('writes the submitted files, then moves them out of the stored spec (kept for a retry)', async () => {
    const d = await deploy('prepare-files');
    const ctx = await contextFor(d, { files: { 'src/a.txt': 'A' } });
    const claimed = await claimAttempt(ctx);
    const prepared = await prepareAttempt(ctx, claimed as Exclude<typeof claimed, { kind: string }>);
    expect(prepared).toMatchObject({
      workspace: join(d.workspaceRoot, ctx.runId),
      locale: 'en',
      resolutions: undefined,
    });
    expect(existsSync(join(d.workspaceRoot, ctx.runId, 'src/a.txt'))).toBe(true);
    expect((await d.store.get(ctx.runId))?.spec?.files).toBeUndefined();
    expect(await d.store.keptFiles(ctx.runId)).toEqual({ 'src/a.txt': 'A' });
  });

  it('fails the run, not retryable, on a file path outside the workspace', async () => {
    const d = await deploy('prepare-escape');
    const ctx = await contextFor(d);
    const prepared = await prepareAttempt(ctx, {
      tenant: TENANT,
      spec: { input: 'x', files: { '../out.txt': 'x' } },
      checkpoint: undefined,
    });
    expect(prepared).toMatchObject({ kind: 'failed', retryable: false, error: { code: 'ERR_WORKER_FILES' } });
  });

  it('sends a run woken before its answer back to sleep until the deadline, and resumes an answered one', async () => {
    const d = await deploy('prepare-question');
    const ctx = await contextFor(d);
    await claimAttempt(ctx);
    const expiresAtMs = Date.now() + 60_000;
    const pending = {
      requestId: 'clr_1',
      question: 'Which?',
      choices: [],
      expiresAt: new Date(expiresAtMs).toISOString(),
    };
    await d.store.suspend(ctx.runId, ctx.fence, pending);
    const checkpoint = JSON.stringify({
      version: 1,
      messages: [
        { role: 'system', content: 's' },
        { role: 'user', content: 'u' },
      ],
      todos: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      step: 1,
      activeMs: 0,
      pendingClarify: { ...pending, callId: 'call_0_0' },
    });
    const spec = { input: 'x' };
    expect(await prepareAttempt(ctx, { tenant: TENANT, spec, checkpoint })).toEqual({
      kind: 'waiting',
      on: 'question',
      again: { untilMs: expiresAtMs },
    });
    expect(await d.store.answer(ctx.runId, 'clr_1', 'red')).toBe('ok');
    expect(await prepareAttempt(ctx, { tenant: TENANT, spec, checkpoint })).toMatchObject({
      resolutions: [{ requestId: 'clr_1', answer: 'red' }],
    });
  });
});

describe('the retry path', () => {
  it('records run.retrying with the delay BullMQ then waits, and the next attempt completes the run', async () => {
    const d = await deploy('retry');
    const service = new RunService({ redis: d.redis, keys: d.keys, store: d.store, backoffMs: 1_000 });
    closers.push(() => service.close());
    let failures = 0;
    class FlakyStore extends RunStore {
      override async saveCheckpoint(...args: Parameters<RunStore['saveCheckpoint']>): Promise<number> {
        if (failures++ === 0) throw new TetherError('ERR_EVENT_LOG_WRITE', 'injected', { retryable: true });
        return super.saveCheckpoint(...args);
      }
    }
    const store = new FlakyStore({ redis: d.redis, keys: d.keys });
    inProcessWorker(d, store);
    const { run } = await service.submit(TENANT, {
      input: 'x',
      model: {
        provider: 'replay',
        script: [{ toolCalls: [call('todo', { todos: [] })] }, { content: 'done' }],
      },
    });
    const retrying = await d.waitForEvent(run.id, 'run.retrying');
    expect(retrying.data).toEqual({
      attempt: 2,
      delayMs: 1_000,
      error: { code: 'ERR_EVENT_LOG_WRITE', message: 'injected' },
    });
    // BullMQ waits exactly what the event says (its backoff strategy takes the delay from the error).
    await until(async () => (await service.getJob(run.id))?.delay === 1_000, 'the job to be delayed 1 s');
    expect(await (await service.getJob(run.id))?.getState()).toBe('delayed');
    await d.waitForEvent(run.id, 'run.completed', 10_000);
    const events = await d.store.readEvents(run.id);
    const second = events.find((e) => e.type === 'attempt.started' && e.data.attempt === 2);
    expect(Date.parse(second?.at ?? '') - Date.parse(retrying.at)).toBeGreaterThanOrEqual(950);
    expect((await d.store.get(run.id))?.attempts).toBe(2);
  });
});

describe('a stale worker', () => {
  it('is refused at its next checkpoint once another worker owns the run, writes nothing more, and hands the job back', async () => {
    const d = await deploy('fenced');
    inProcessWorker(d, new RunStore({ redis: d.redis, keys: d.keys }));
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: 'sleep 1; echo a > a.txt' })] },
      { toolCalls: [call('bash', { command: 'echo b > b.txt' })] },
      { content: 'done' },
    ]);
    await d.waitForEvent(runId, 'tool.call');
    // Another worker claims the run (as one whose lock ran out before its claim would): it owns
    // the run, but this worker still holds the job.
    const claim = await d.store.claim(runId, 'w2:t2', 2, 'w2');
    expect(claim.status).toBe('ok');
    const takeover = (await d.store.readEvents(runId)).at(-1);
    expect(takeover).toMatchObject({ type: 'attempt.started', data: { attempt: 2 } });
    // Its command's result is not saved; completing the job would leave the run running with no
    // job, so the job goes back to waiting and the next attempt takes the run over and ends it.
    await d.waitForEvent(runId, 'run.completed', 20_000);
    const events = await d.store.readEvents(runId);
    const after = events.slice(events.findIndex((event) => event.id === takeover?.id) + 1);
    expect(after[0]).toMatchObject({ type: 'attempt.started' });
    expect(after.filter((event) => event.type === 'attempt.started')).toHaveLength(1);
    expect(await d.store.get(runId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(d.workspaceRoot, runId, 'b.txt'))).toBe(true);
  });
});

describe('settleOutcome of a delegation', () => {
  it("a worker that lost the run to another leaves the delegation's children to the new owner, never cancels them", async () => {
    const d = await deploy('stale-delegation');
    const ctx = await contextFor(d, { toolsets: ['base', 'crew'] });
    await claimAttempt(ctx);
    // Another worker takes the run over (this one's lock ran out); it will delegate the same children.
    expect((await d.store.claim(ctx.runId, 'w2:t2', 2, 'w2')).status).toBe('ok');
    const childRunId = newChildRunId(ctx.runId);
    const child = {
      id: childRunId,
      tenant: TENANT,
      spec: { input: 'a task' },
      createdAtMs: Date.now(),
      queue: d.keys.queuePrefix,
      crew: {
        parentRunId: ctx.runId,
        rootRunId: ctx.runId,
        depth: 1,
        call: 'call_0_0',
        index: 0,
        deadlineMs: Date.now() + 60_000,
      },
    };
    const job = {
      ...ctx.job,
      // The lock is the new owner's: BullMQ refuses this worker's moves.
      moveToWait: async () => {
        throw new Error('Missing lock for job');
      },
    } as unknown as Job<RunJobData>;
    const settled = await settleOutcome(
      { ...ctx, job, token: 'stale' },
      {
        kind: 'waiting',
        on: 'children',
        open: {
          delegation: {
            callId: 'call_0_0',
            name: 'delegate_task',
            tasks: [{ goal: 'a task', childRunId }],
          },
          children: [child],
        },
      },
    );
    expect(settled).toBeUndefined();
    expect((await d.store.get(childRunId))?.status).toBe('queued');
    expect(await d.store.get(ctx.runId)).toMatchObject({ status: 'running', owner: 'w2:t2' });
  });
});

describe('settleOutcome of a new waitpoint', () => {
  it('a run that is not running when its attempt asks (an earlier release queued it) hands the job back, writing nothing', async () => {
    const d = await deploy('not-running');
    const ctx = await contextFor(d);
    await claimAttempt(ctx);
    // As an API of an earlier release did with an answer arriving while the run was awake.
    await d.redis.hset(d.keys.run(ctx.runId).record, 'status', 'queued');
    const before = await d.store.readEvents(ctx.runId);
    let handedBack = 0;
    const job = {
      ...ctx.job,
      moveToWait: async () => {
        handedBack++;
      },
    } as unknown as Job<RunJobData>;
    const asking = settleOutcome(
      { ...ctx, job },
      {
        kind: 'waiting',
        on: 'question',
        open: {
          requestId: 'clr_x',
          question: 'Which?',
          choices: [],
          expiresAt: new Date(Date.now() + 60_000).toISOString(),
        },
      },
    );
    await expect(asking).rejects.toMatchObject({ name: 'WaitingError' });
    expect(handedBack).toBe(1);
    expect(await d.store.readEvents(ctx.runId)).toEqual(before);
    expect(await d.store.get(ctx.runId)).toMatchObject({ status: 'queued', owner: 'w1:t1' });
  });
});
