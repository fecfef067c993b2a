/**
 * Crew faults with real worker processes: a child that ends as every worker is killed with -9 (the
 * parent's wake may be lost with them), and a cancel racing a parent's move to waiting for its
 * children. Whatever the timing, each child's end reaches its parent once, the parent resumes once,
 * and a cancelled tree leaves nothing running, queued or holding a tenant slot.
 */
import { execFileSync } from 'node:child_process';
import type { ReplayScript, RunEvent } from '@tether/protocol';
import type { TestProcess } from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { call, type Deployment, submitCrewParent, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

const ofType = (events: RunEvent[], type: string) => events.filter((e) => e.type === type);

/**
 * A parent with one child whose end (`run.completed` or `run.failed`, `ending`) is followed at once
 * by a kill -9 of every worker, from the event's own broadcast: the worker that ended the child may
 * die before it wakes the parent. A worker started afterwards must bring the parent back, once.
 */
async function childEndsAsWorkersDie(d: Deployment, child: ReplayScript, ending: string) {
  const workers: TestProcess[] = await Promise.all([d.startWorker(), d.startWorker()]);
  const parentId = await submitCrewParent(d, ['the only task'], [{ script: child }]);
  const started = await d.waitForEvent(parentId, 'child.started');
  const childId = (started.data as { childRunId: string }).childRunId;
  let killedAt: string | undefined;
  const unsubscribe = await d.hub.subscribe(childId, (event) => {
    if (event.type !== ending || killedAt) return;
    killedAt = event.id;
    for (const worker of workers) worker.child.kill('SIGKILL');
  });
  try {
    await until(() => killedAt !== undefined, `the child's ${ending}`, 30_000);
  } finally {
    await unsubscribe();
  }
  await Promise.all(workers.map((worker) => worker.exited));
  // Woken before the kill (waiting), or not (still delayed, until the children's 30 min deadline), or
  // woken and taken by a worker that was killed then (active, its lock left to run out: BullMQ's stall
  // check hands it on, and that worker may have started an attempt): only the next worker carries it on.
  const state = await (await d.service.getJob(parentId))?.getState();
  expect(['waiting', 'delayed', 'prioritized', 'active']).toContain(state);
  const attemptsBefore = ofType(await d.store.readEvents(parentId), 'attempt.started').length;

  await d.startWorker();
  await d.waitForEvent(parentId, 'run.completed', 45_000);

  const events = await d.store.readEvents(parentId);
  expect(ofType(events, 'child.started')).toHaveLength(1);
  const finished = ofType(events, 'child.finished');
  expect(finished.map((e) => (e.data as { childRunId: string }).childRunId)).toEqual([childId]);
  // One attempt to delegate (and one a killed worker may have started), then one that resumed it.
  const attempts = ofType(events, 'attempt.started');
  expect(attemptsBefore === 1 || state === 'active').toBe(true);
  expect(attempts).toHaveLength(attemptsBefore + 1);
  expect(events.indexOf(attempts.at(-1) as RunEvent)).toBeGreaterThan(
    events.indexOf(finished[0] as RunEvent),
  );
  const results = events.filter(
    (e): e is RunEvent<'tool.result'> => e.type === 'tool.result' && e.data.name === 'delegate_parallel',
  );
  expect(results).toHaveLength(1);
  expect(events.at(-1)?.type).toBe('run.completed');
  expect(ofType(events, 'run.completed')).toHaveLength(1);

  const childEvents = await d.store.readEvents(childId);
  const ends = childEvents.filter((e) => ['run.completed', 'run.failed', 'run.cancelled'].includes(e.type));
  expect(ends.map((e) => e.id)).toEqual([killedAt]);
  expect(childEvents.at(-1)?.id).toBe(killedAt);
  return {
    parentId,
    childId,
    state,
    entries: JSON.parse(results[0]?.data.content ?? '[]') as { status: string }[],
  };
}

const CHILD_SLEEP = 'sleep 20.5173';

/** Whether a process of this host runs `command` (the children's, found by their unique sleep). */
function commandRuns(command: string): boolean {
  try {
    // The class keeps pgrep's pattern from matching a command line that holds the pattern itself.
    execFileSync('pgrep', ['-f', command.replace('.', '[.]')]);
    return true;
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
}

describe('crew faults', () => {
  it('a child completes as every worker is killed with -9: the next worker resumes the parent once, with the child reported once', async () => {
    const d = await deploy('crew-kill-completed');
    const { entries } = await childEndsAsWorkersDie(
      d,
      [{ toolCalls: [call('bash', { command: 'sleep 1' })] }, { content: 'child done' }],
      'run.completed',
    );
    expect(entries.map((e) => e.status)).toEqual(['completed']);
  });

  it('a child fails as every worker is killed with -9: the next worker resumes the parent once, with the failure reported once', async () => {
    const d = await deploy('crew-kill-failed');
    // No final turn: the replay runs out and the child fails (not retried).
    const { entries } = await childEndsAsWorkersDie(
      d,
      [{ toolCalls: [call('bash', { command: 'sleep 1' })] }],
      'run.failed',
    );
    expect(entries.map((e) => e.status)).toEqual(['failed']);
  });

  it('a cancel racing the parent into waiting_for_children, at 20 points around the delegation: the whole tree ends cancelled, nothing left running, queued or holding a slot', async () => {
    const d = await deploy('crew-cancel-race');
    const env = { TETHER_TENANT_MAX_RUNNING: '6', TETHER_WORKER_CONCURRENCY: '4' };
    await Promise.all([d.startWorker(env), d.startWorker(env)]);
    const children = [
      { script: [{ toolCalls: [call('bash', { command: CHILD_SLEEP })] }, { content: 'never' }] },
    ];
    // Sixteen cancels from 0 to 90 ms after the parent's attempt starts, 6 ms apart: before its
    // model turn, during its delegation (children being created, the parent moving to
    // waiting_for_children) or just after, as the host's load places it; four once its children
    // run their commands, which the cancel must stop.
    const trials = [
      ...Array.from({ length: 16 }, (_, i) => ({ after: 'attempt.started' as const, delayMs: i * 6 })),
      ...[300, 600, 1_000, 1_500].map((delayMs) => ({ after: 'child.started' as const, delayMs })),
    ];
    const parents = await Promise.all(
      trials.map(async ({ after, delayMs }) => {
        const parentId = await submitCrewParent(d, ['first', 'second'], children);
        await d.waitForEvent(parentId, after, 45_000);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        await d.service.cancel(TENANT, parentId).catch((error: { code?: string }) => {
          // Only an ended run refuses a cancel, and a parent cannot end before its children.
          throw new Error(
            `the cancel of ${parentId} ${delayMs} ms after ${after} was refused: ${error.code}`,
          );
        });
        return parentId;
      }),
    );
    await until(
      async () => (await d.store.getMany(parents)).every((run) => run?.status === 'cancelled'),
      'every parent to be cancelled',
      15_000,
    );
    const childIds = (await Promise.all(parents.map((id) => d.store.childIds(id)))).flat();
    await until(
      async () => (await d.store.getMany(childIds)).every((run) => run?.status === 'cancelled'),
      // Long before their commands (20 s) could end by themselves: they were stopped.
      'every child to be cancelled',
      12_000,
    );
    // Every slot given back and nobody left in line. Each attempt gives its slot back as it ends, and a
    // child the API cancels with no attempt leaves the line and frees a slot handed to it
    // (forgetTenantSlot). One a worker had just taken off the queue when the cancel came ends on that
    // worker, which may leave such a reservation (four leases) or place in line (until a release finds
    // it ended): only such leftovers of this tree, and a run of the tenant started afterwards clears them.
    const slotKeys = d.keys.tenantSlots(TENANT);
    const tree = new Set([...parents, ...childIds]);
    const slotsLeft = async () => ({
      holders: await d.redis.hgetall(slotKeys.holders),
      parked: await d.redis.zrange(slotKeys.parked, '0', '-1'),
    });
    await until(
      async () => Object.values((await slotsLeft()).holders).every((holder) => holder === ''),
      'every attempt to give its slot back',
      20_000,
    );
    const left = await slotsLeft();
    for (const runId of [...Object.keys(left.holders), ...left.parked])
      expect(tree.has(runId), runId).toBe(true);
    if ((await d.redis.exists(slotKeys.running, slotKeys.holders, slotKeys.parked)) > 0) {
      await new Promise((resolve) => setTimeout(resolve, 4 * 2_000 + 500));
      await d.waitForEvent(await d.submit([{ content: 'after the tree' }]), 'run.completed', 30_000);
    }
    await until(
      async () => (await d.redis.exists(slotKeys.running, slotKeys.holders, slotKeys.parked)) === 0,
      'every tenant slot to be free and nobody waiting for one',
      20_000,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await slotsLeft())}`);
    });
    await until(
      async () => {
        const counts = await d.service.jobCounts('active', 'waiting', 'delayed', 'prioritized');
        return Object.values(counts).every((count) => count === 0);
      },
      'no job left in the queue',
      20_000,
    );
    await until(() => !commandRuns(CHILD_SLEEP), "every child's command to be killed", 20_000);
    for (const id of [...parents, ...childIds]) {
      const events = await d.store.readEvents(id);
      expect(events.at(-1)?.type, id).toBe('run.cancelled');
      expect(ofType(events, 'run.cancelled'), id).toHaveLength(1);
    }
  });
});
