/**
 * Faults with real worker processes: a shutdown whose grace ends inside a
 * call behaves like a crash (the next owner runs the call again; no
 * "Cancelled" result nobody asked for), and a worker stopped past its lock
 * has its command killed before another worker runs the call again.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { QUEUE_NAME } from '@tether/store/redis';
import { probeBwrap } from '@tether/tools';
import { describe, expect, it } from 'vitest';
import { call, until, useDeployments } from './harness.js';

const deploy = useDeployments();

const sandbox = (await probeBwrap()).ok ? 'bwrap' : 'none';

/**
 * A call that appends `<id> <phase>` lines to `effect` (start, a tick every 50 ms for `ticks`, end).
 * Run again (`effect` holds lines already), it ticks twice: the first execution is the one that must
 * outlive a lock, and the next owner's need not take as long.
 */
function effectCommand(ticks: number): string {
  return [
    'id=$(cat /proc/sys/kernel/random/uuid)',
    `n=${ticks}; [ -s effect ] && n=2`,
    'echo "$id start" >> effect',
    'for i in $(seq $n); do sleep 0.05; echo "$id tick" >> effect; done',
    'echo "$id end" >> effect',
  ].join('; ');
}

async function effect(workspace: string): Promise<{ id: string; phase: string }[]> {
  const text = await readFile(join(workspace, 'effect'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [id = '', phase = ''] = line.split(' ');
      return { id, phase };
    });
}

/** The ids in order of their first line, and whether any id wrote after the next one started. */
function interleaved(lines: { id: string; phase: string }[]): boolean {
  const order: string[] = [];
  for (const line of lines) if (!order.includes(line.id)) order.push(line.id);
  return lines.some((line, index) => {
    const next = order[order.indexOf(line.id) + 1];
    return next !== undefined && lines.slice(0, index).some((earlier) => earlier.id === next);
  });
}

describe(`worker faults (sandbox ${sandbox})`, () => {
  it('a call interrupted by the end of the shutdown grace is run again by the next owner, like a crash', async () => {
    const d = await deploy('grace');
    const a = await d.startWorker({
      TETHER_WORKER_ID: 'worker-a',
      TETHER_SHUTDOWN_GRACE_MS: '200',
      TETHER_SANDBOX: sandbox,
    });
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: effectCommand(40) })] },
      { content: 'done' },
    ]);
    const workspace = join(d.workspaceRoot, runId);
    await until(async () => (await effect(workspace)).length > 0, 'the call to start');
    expect(await a.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    await d.startWorker({ TETHER_WORKER_ID: 'worker-b', TETHER_SANDBOX: sandbox });
    await d.waitForEvent(runId, 'run.completed', 30_000);

    const events = await d.store.readEvents(runId);
    const results = events.filter((e) => e.type === 'tool.result');
    // One result, the real one: no "Cancelled" that nobody asked for.
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results[0]?.data)).not.toContain('Cancelled');
    const lines = await effect(workspace);
    const ids = [...new Set(lines.map((line) => line.id))];
    // At least once: the interrupted execution, then the one that finished.
    expect(ids).toHaveLength(2);
    expect(lines.filter((line) => line.phase === 'end').map((line) => line.id)).toEqual([ids[1]]);
    expect(interleaved(lines)).toBe(false);
  }, 60_000);

  it('a worker stopped past its lock: its command dies before another worker runs the call again, and it writes nothing when it wakes', async () => {
    const d = await deploy('sigstop');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a', TETHER_SANDBOX: sandbox });
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: effectCommand(100) })] },
      { content: 'done by b' },
    ]);
    const workspace = join(d.workspaceRoot, runId);
    await until(async () => (await effect(workspace)).length > 2, 'the call to run');
    a.child.kill('SIGSTOP');
    const b = await d.startWorker({ TETHER_WORKER_ID: 'worker-b', TETHER_SANDBOX: sandbox });
    await d.waitForEvent(runId, 'run.completed', 40_000);
    a.child.kill('SIGCONT');
    // A wakes: it must not act on the run any more (its writes are fenced, its command is long dead).
    // Once it says it lost its lock, its attempt is over: whatever it wrote is there to be seen.
    await a.waitFor(/this worker lost its lock on the run/, 30_000);
    const lines = await effect(workspace);
    expect(interleaved(lines)).toBe(false);
    const ids = [...new Set(lines.map((line) => line.id))];
    expect(ids).toHaveLength(2);
    expect(lines.filter((line) => line.phase === 'end').map((line) => line.id)).toEqual([ids[1]]);
    const events = await d.store.readEvents(runId);
    expect(events.filter((e) => e.type === 'tool.result')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
    expect((await d.store.get(runId))?.output).toBe('done by b');
    expect(b.output()).toContain('run completed');
  }, 90_000);

  it('a worker paused for less than its lock (a busy host) stops the attempt, and the run goes on to the end', async () => {
    const d = await deploy('pause');
    const lockMs = 2_000;
    const a = await d.startWorker({ TETHER_LOCK_DURATION_MS: String(lockMs), TETHER_SANDBOX: sandbox });
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: 'sleep 4' })] },
      { content: 'done after the pause' },
    ]);
    await d.waitForEvent(runId, 'tool.call');
    // Right after the worker renews its lock, pause it for 80% of the lock: past the 75% after which
    // the worker stops an attempt whose lock it could not renew, but with the lock still its own.
    const lock = `${d.keys.shardPrefix(0)}:${QUEUE_NAME}:${runId}:lock`;
    await until(async () => Number(await d.redis.pttl(lock)) > lockMs * 0.92, 'a fresh renewal', 10_000);
    a.child.kill('SIGSTOP');
    await delay(lockMs * 0.8);
    a.child.kill('SIGCONT');
    await d.waitForEvent(runId, 'run.completed', 30_000);
    expect((await d.store.get(runId))?.output).toBe('done after the pause');
    expect(a.output()).toContain('this worker lost its lock on the run');
    // The run was taken over by a new attempt, not left running with no job.
    const started = (await d.store.readEvents(runId)).filter((e) => e.type === 'attempt.started');
    expect(started.length).toBeGreaterThanOrEqual(2);
  });
});
