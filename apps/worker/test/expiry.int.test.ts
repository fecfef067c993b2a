/**
 * Expiry with a real worker process: a queued run behind a busy worker is not started past its
 * deadline (the sweep, under the worker's lease, ends it at about that time; the worker's claim
 * then finds it ended), and a scheduled run whose deadline comes before its time never starts. The
 * invariant checker (run-expiry among its rules) runs after each test.
 */
import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { call, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

const body = { input: 'soon', model: { provider: 'replay' as const, script: [{ content: 'done' }] } };
const timeOf = (events: RunEvent[], type: string) =>
  Date.parse(events.find((e) => e.type === type)?.at ?? '');

describe('a run with a deadline to start by', () => {
  it('queued behind a busy worker, expires at about its deadline and never starts', async () => {
    const d = await deploy('expiry-busy');
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '1' });
    const busy = await d.submit([{ toolCalls: [call('bash', { command: 'sleep 3' })] }, { content: 'done' }]);
    await d.waitForEvent(busy, 'run.started');
    const expiresAtMs = Date.now() + 1_000;
    const { run } = await d.service.submit(TENANT, body, { expiresAtMs });
    // Submitted with no deadline after it: it waits for the busy one, then runs.
    const after = (await d.service.submit(TENANT, body)).run.id;
    const expired = await d.waitForEvent(run.id, 'run.expired');
    expect(expired.data).toEqual({ expiresAt: new Date(expiresAtMs).toISOString() });
    // The sweep's bound: about a second after the deadline (generous for a busy host).
    expect(Date.parse(expired.at) - expiresAtMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(expired.at) - expiresAtMs).toBeLessThan(2_500);
    await d.waitForEvent(after, 'run.completed');
    await d.waitForEvent(busy, 'run.completed');
    const events = await d.store.readEvents(run.id);
    expect(events.map((e) => e.type)).toEqual(['run.queued', 'run.expired']);
    expect((await d.store.get(run.id))?.status).toBe('expired');
    expect(await d.service.getJob(run.id)).toBeUndefined();
  });

  it('scheduled, whose deadline comes before its time, never starts', async () => {
    const d = await deploy('expiry-scheduled');
    await d.startWorker();
    const expiresAtMs = Date.now() + 1_000;
    const { run } = await d.service.submit(TENANT, body, { runAtMs: expiresAtMs + 1_000, expiresAtMs });
    // A witness due after both times: once it has completed, the scheduled run's time has passed.
    const witness = (await d.service.submit(TENANT, body, { runAtMs: expiresAtMs + 1_500 })).run.id;
    await d.waitForEvent(witness, 'run.completed');
    const events = await d.store.readEvents(run.id);
    expect(events.map((e) => e.type)).toEqual(['run.scheduled', 'run.expired']);
    expect(timeOf(events, 'run.expired')).toBeGreaterThanOrEqual(expiresAtMs);
    expect((await d.store.get(run.id))?.startedAt).toBeUndefined();
  });

  it('taken by a worker before its deadline, runs to the end past it', async () => {
    const d = await deploy('expiry-started');
    await d.startWorker();
    const expiresAtMs = Date.now() + 1_500;
    const runId = (
      await d.service.submit(
        TENANT,
        {
          input: 'slow',
          model: {
            provider: 'replay',
            script: [{ toolCalls: [call('bash', { command: 'sleep 2' })] }, { content: 'done' }],
          },
        },
        { expiresAtMs },
      )
    ).run.id;
    const completed = await d.waitForEvent(runId, 'run.completed');
    expect(Date.parse(completed.at)).toBeGreaterThan(expiresAtMs);
    const events = await d.store.readEvents(runId);
    expect(timeOf(events, 'run.started')).toBeLessThan(expiresAtMs);
    expect(events.map((e) => e.type)).not.toContain('run.expired');
  });

  it('many runs expiring as workers take them: each started before its deadline, or expired, never both', async () => {
    const d = await deploy('expiry-race');
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '4' });
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '4' });
    const base = Date.now() + 150;
    const runs = new Map<string, number>();
    for (let i = 0; i < 30; i += 1) {
      // Deadlines spread over 150 ms around the moment the workers get to them.
      const expiresAtMs = base + i * 5;
      runs.set((await d.service.submit(TENANT, body, { expiresAtMs })).run.id, expiresAtMs);
    }
    const ends = await Promise.all(
      [...runs.keys()].map((id) =>
        d.waitForEvent(id, (e) => e.type === 'run.completed' || e.type === 'run.expired'),
      ),
    );
    for (const [index, [id, expiresAtMs]] of [...runs].entries()) {
      const events = await d.store.readEvents(id);
      const types = events.map((e) => e.type);
      if (ends[index]?.type === 'run.expired') {
        expect(types, id).toEqual(['run.queued', 'run.expired']);
        expect(timeOf(events, 'run.expired')).toBeGreaterThanOrEqual(expiresAtMs);
      } else {
        expect(types, id).not.toContain('run.expired');
        expect(timeOf(events, 'run.started'), id).toBeLessThan(expiresAtMs);
        expect(types.filter((type) => type === 'run.started')).toHaveLength(1);
      }
    }
  });
});
