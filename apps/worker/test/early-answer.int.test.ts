import type { PendingClarify } from '@tether/protocol';
import { QUEUE_NAME, type RunJobData, RunStore } from '@tether/queue';
import { testRedisUrl } from '@tether/testing';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../src/config.js';
import { createProcessor } from '../src/processor.js';
import { call, createDeployment, type Deployment, TENANT } from './harness.js';

let deployment: Deployment | undefined;
let worker: Worker<RunJobData> | undefined;
afterEach(async () => {
  await worker?.close();
  await deployment?.close();
});

describe('an answer that arrives before the suspension is complete', () => {
  it('is not stranded: the worker promotes the job itself right after delaying it', async () => {
    const d = await createDeployment('early');
    deployment = d;
    const config = loadWorkerConfig({
      REDIS_URL: testRedisUrl(),
      TETHER_QUEUE_PREFIX: d.prefix,
      TETHER_WORKSPACE_ROOT: d.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_SANDBOX: 'none',
    });
    const jobStates: string[] = [];
    // A store whose suspension is answered at once, while the job is still active (not yet delayed).
    class RacingStore extends RunStore {
      override async suspend(runId: string, token: string, pending: PendingClarify): Promise<string> {
        const id = await super.suspend(runId, token, pending);
        const job = await d.service.queue.getJob(runId);
        jobStates.push(String(await job?.getState()));
        await d.service.answer(TENANT, runId, pending.requestId, 'early bird');
        return id;
      }
    }
    const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    const store = new RacingStore({ redis: connection, keys: d.keys });
    const processor = createProcessor({
      config,
      store,
      logger: pino({ level: 'silent' }),
      shuttingDown: () => false,
    });
    worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
      connection,
      prefix: d.keys.queuePrefix,
      concurrency: 2,
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
    const d = await createDeployment('early-cancel');
    deployment = d;
    const config = loadWorkerConfig({
      REDIS_URL: testRedisUrl(),
      TETHER_QUEUE_PREFIX: d.prefix,
      TETHER_WORKSPACE_ROOT: d.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_SANDBOX: 'none',
    });
    const cancels: string[] = [];
    // The cancel lands while the job is still active: it cannot remove the job, and only sets the flag.
    class RacingStore extends RunStore {
      override async suspend(runId: string, token: string, pending: PendingClarify): Promise<string> {
        const id = await super.suspend(runId, token, pending);
        cancels.push(await d.service.cancel(TENANT, runId));
        return id;
      }
    }
    const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    const store = new RacingStore({ redis: connection, keys: d.keys });
    const processor = createProcessor({
      config,
      store,
      logger: pino({ level: 'silent' }),
      shuttingDown: () => false,
    });
    worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
      connection,
      prefix: d.keys.queuePrefix,
      concurrency: 2,
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
});
