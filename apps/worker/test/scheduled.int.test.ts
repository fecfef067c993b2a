/**
 * Delayed runs with real worker processes: a run scheduled for later starts at its time (never
 * before, within the queue's latency after), once; one cancelled, given a new time or deleted
 * while scheduled does what was asked and nothing at its old time.
 */
import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { type Deployment, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

const body = { input: 'later', model: { provider: 'replay' as const, script: [{ content: 'done' }] } };

async function schedule(d: Deployment, runAtMs: number): Promise<string> {
  return (await d.service.submit(TENANT, body, { runAtMs })).run.id;
}

const timeOf = (events: RunEvent[], type: string) =>
  Date.parse(events.find((e) => e.type === type)?.at ?? '');
const count = (events: RunEvent[], type: string) => events.filter((e) => e.type === type).length;

describe('a delayed run', () => {
  it('starts at its time, not before, once', async () => {
    const d = await deploy('scheduled-start');
    await d.startWorker();
    const runAtMs = Date.now() + 1_500;
    const runId = await schedule(d, runAtMs);
    expect((await d.store.get(runId))?.status).toBe('scheduled');
    await d.waitForEvent(runId, 'run.completed');
    const events = await d.store.readEvents(runId);
    expect(events.map((e) => e.type).slice(0, 4)).toEqual([
      'run.scheduled',
      'run.queued',
      'run.started',
      'attempt.started',
    ]);
    expect(timeOf(events, 'run.queued')).toBeGreaterThanOrEqual(runAtMs);
    expect(timeOf(events, 'run.started')).toBeGreaterThanOrEqual(runAtMs);
    // Within BullMQ's latency for a due delayed job on an idle worker (generous for a busy host).
    expect(timeOf(events, 'run.started') - runAtMs).toBeLessThan(2_000);
    expect(count(events, 'run.started')).toBe(1);
    expect(count(events, 'attempt.started')).toBe(1);
  });

  it('given a later time, starts at the new time only; given an earlier one, starts then', async () => {
    const d = await deploy('scheduled-move');
    await d.startWorker();
    const later = await schedule(d, Date.now() + 1_000);
    const sooner = await schedule(d, Date.now() + 60_000);
    const laterMs = Date.now() + 3_000;
    await d.service.reschedule(TENANT, later, laterMs);
    const soonerMs = Date.now() + 500;
    await d.service.reschedule(TENANT, sooner, soonerMs);
    await d.waitForEvent(sooner, 'run.completed');
    await d.waitForEvent(later, 'run.completed');
    const laterEvents = await d.store.readEvents(later);
    expect(timeOf(laterEvents, 'run.started')).toBeGreaterThanOrEqual(laterMs);
    expect(count(laterEvents, 'run.started')).toBe(1);
    expect(count(laterEvents, 'attempt.started')).toBe(1);
    const soonerEvents = await d.store.readEvents(sooner);
    expect(timeOf(soonerEvents, 'run.started')).toBeGreaterThanOrEqual(soonerMs);
    expect(timeOf(soonerEvents, 'run.started') - soonerMs).toBeLessThan(2_000);
    await expect(d.service.reschedule(TENANT, later, Date.now() + 1_000)).rejects.toMatchObject({
      code: 'ERR_RUN_NOT_SCHEDULED',
    });
  });

  it('cancelled or deleted while scheduled never starts', async () => {
    const d = await deploy('scheduled-cancel');
    await d.startWorker();
    const runAtMs = Date.now() + 1_000;
    const cancelled = await schedule(d, runAtMs);
    const deleted = await schedule(d, runAtMs);
    // A witness scheduled just after them: once it has completed, their time has passed too.
    const witness = await schedule(d, runAtMs + 200);
    expect(await d.service.cancel(TENANT, cancelled)).toBe('scheduled');
    await d.service.delete(TENANT, deleted);
    await d.waitForEvent(witness, 'run.completed');
    expect((await d.store.readEvents(cancelled)).map((e) => e.type)).toEqual([
      'run.scheduled',
      'run.cancelled',
    ]);
    expect(await d.store.get(deleted)).toBeUndefined();
    expect(await d.store.readEvents(deleted)).toEqual([]);
  });
});
