import type { PendingClarify, PendingToolCall, RunEventInput } from '@tether/protocol';
import { QUEUE_NAME } from '@tether/store/redis';
import { type RunJobData, RunStore } from '@tether/store/runs';
import { testRedisUrl } from '@tether/testing';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { crewQueue } from '../src/attempt/crew.js';
import { loadWorkerConfig } from '../src/config.js';
import { createProcessor } from '../src/processor.js';
import { call, createDeployment, type Deployment, TENANT, until } from './harness.js';

let deployment: Deployment | undefined;
let worker: Worker<RunJobData> | undefined;
afterEach(async () => {
  await worker?.close();
  await deployment?.close();
});

/**
 * A deployment with an in-process worker whose store races its own
 * suspension: `onSuspended` runs right after the suspension is stored, while
 * the job is still active (not yet delayed).
 */
async function racingDeployment(
  name: string,
  onSuspended: (d: Deployment, runId: string, pending: PendingClarify) => Promise<void>,
  onSleep: (d: Deployment, runId: string) => Promise<void> = async () => {},
  onToolCalls: (
    d: Deployment,
    runId: string,
    calls: readonly PendingToolCall[],
  ) => Promise<void> = async () => {},
): Promise<Deployment> {
  const d = await createDeployment(name);
  deployment = d;
  const config = loadWorkerConfig({
    REDIS_URL: testRedisUrl(),
    TETHER_QUEUE_PREFIX: d.prefix,
    TETHER_WORKSPACE_ROOT: d.workspaceRoot,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_SANDBOX: 'none',
  });
  class RacingStore extends RunStore {
    override async suspend(
      runId: string,
      token: string,
      pending: PendingClarify,
      events: readonly RunEventInput[] = [],
    ): Promise<'recorded' | 'again'> {
      const recorded = await super.suspend(runId, token, pending, events);
      await onSuspended(d, runId, pending);
      return recorded;
    }
    override async requestToolCalls(
      runId: string,
      token: string,
      calls: readonly PendingToolCall[],
      events: readonly RunEventInput[] = [],
    ): Promise<'recorded' | 'again'> {
      const recorded = await super.requestToolCalls(runId, token, calls, events);
      await onToolCalls(d, runId, calls);
      return recorded;
    }
    // Going back to sleep on a question (woken early): what races it comes right after the status.
    override async setStatus(
      runId: string,
      token: string,
      status: 'queued' | 'running' | 'waiting_for_input',
    ): Promise<boolean> {
      const set = await super.setStatus(runId, token, status);
      if (status === 'waiting_for_input') await onSleep(d, runId);
      return set;
    }
  }
  const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  const processor = createProcessor({
    config,
    store: new RacingStore({ redis: connection, keys: d.keys }),
    logger: pino({ level: 'silent' }),
    shuttingDown: () => false,
    wakeSession: async () => {},
    crew: crewQueue(d.service, d.keys),
    jobs: d.service,
  });
  worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
    connection,
    prefix: d.keys.queuePrefix,
    concurrency: 2,
  });
  return d;
}

describe('an answer that arrives before the suspension is complete', () => {
  it('is not stranded: the worker promotes the job itself right after delaying it', async () => {
    const jobStates: string[] = [];
    const d = await racingDeployment('early', async (d, runId, pending) => {
      const job = await d.service.getJob(runId);
      jobStates.push(String(await job?.getState()));
      await d.service.answer(TENANT, runId, pending.requestId, 'early bird');
    });
    const runId = await d.submit(
      [{ toolCalls: [call('clarify', { question: 'Now?' })] }, { content: 'resumed without waiting' }],
      { clarify: { timeoutMs: 120_000 } },
    );
    const started = Date.now();
    await d.waitForEvent(runId, 'run.completed', 10_000);
    // Far sooner than the two-minute deadline the job was delayed until.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(jobStates).toEqual(['active']);
    const events = (await d.store.readEvents(runId)).map((e) => e.type);
    expect(events.indexOf('clarify.requested')).toBeLessThan(events.indexOf('clarify.answered'));
    const result = (await d.store.readEvents(runId)).find((e) => e.type === 'tool.result');
    expect(result?.data).toMatchObject({ name: 'clarify', content: 'early bird' });
  });

  it('a cancel that arrives before the suspension is complete ends the run at once, not at the deadline', async () => {
    const cancels: string[] = [];
    // The cancel lands while the job is still active: it cannot remove the job, and only sets the flag.
    const d = await racingDeployment('early-cancel', async (d, runId) => {
      cancels.push(await d.service.cancel(TENANT, runId));
    });
    const runId = await d.submit(
      [{ toolCalls: [call('clarify', { question: 'Now?' })] }, { content: 'never' }],
      {
        clarify: { timeoutMs: 120_000 },
      },
    );
    await d.waitForEvent(runId, 'run.cancelled', 10_000);
    expect(cancels).toEqual(['waiting_for_input']);
    expect((await d.store.get(runId))?.status).toBe('cancelled');
  });

  it('a cancel that arrives while a run woken early goes back to sleep ends it at once, not at the deadline', async () => {
    const cancels: string[] = [];
    const d = await racingDeployment(
      'sleep-cancel',
      async () => {},
      async (d, runId) => {
        cancels.push(await d.service.cancel(TENANT, runId));
      },
    );
    const runId = await d.submit(
      [{ toolCalls: [call('clarify', { question: 'Now?' })] }, { content: 'never' }],
      {
        clarify: { timeoutMs: 120_000 },
      },
    );
    await d.waitForEvent(runId, 'clarify.requested', 10_000);
    await until(
      async () => (await (await d.service.getJob(runId))?.getState()) === 'delayed',
      'the job to be delayed',
    );
    // Woken with no answer (as a lost promote would): the worker looks, then goes back to sleep.
    await d.service.engine.promote(runId);
    await d.waitForEvent(runId, 'run.cancelled', 10_000);
    // The job was still active (locked): the cancel only set the flag, and the worker's look after delaying it ended the run.
    expect(cancels).toEqual(['waiting_for_input']);
  });

  it('tool outputs posted before the suspension is complete are not stranded either', async () => {
    const jobStates: string[] = [];
    const d = await racingDeployment(
      'early-tools',
      async () => {},
      async () => {},
      async (d, runId, calls) => {
        jobStates.push(String(await (await d.service.getJob(runId))?.getState()));
        for (const request of calls)
          await d.service.postToolOutput(TENANT, runId, request.requestId, 'early');
      },
    );
    const tool = { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } };
    const runId = await d.submit(
      [
        { toolCalls: [call('lookup', { q: 1 }), call('lookup', { q: 2 })] },
        { content: 'resumed without waiting' },
      ],
      { tools: [tool], toolTimeoutMs: 120_000 },
    );
    const started = Date.now();
    await d.waitForEvent(runId, 'run.completed', 10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(jobStates).toEqual(['active']);
    const results = (await d.store.readEvents(runId)).filter((e) => e.type === 'tool.result');
    expect(results.map((e) => e.data)).toEqual([
      expect.objectContaining({ callId: 'call_0_0', content: 'early' }),
      expect.objectContaining({ callId: 'call_0_1', content: 'early' }),
    ]);
  });
});
