/**
 * The crew with real worker processes: a parent delegates to child runs that
 * spread over the workers, waits for them without a slot, and resumes with
 * every result whatever became of each child (completed, failed, escalated,
 * cancelled, timed out, removed, or its worker killed).
 */
import type { ReplayScript, RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { call, type Deployment, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

interface Entry {
  index: number;
  runId: string;
  status: string;
  summary: string;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
  durationMs: number;
}

type Children = { match?: string; script: ReplayScript; children?: Children }[];

/** Submits a parent with the crew toolset whose children play `children`. */
async function submitParent(d: Deployment, script: ReplayScript, children: Children, extra = {}) {
  const { run } = await d.service.submit(TENANT, {
    input: 'lead the crew',
    toolsets: ['base', 'planning', 'interaction', 'crew'],
    model: { provider: 'replay', script, children } as never,
    ...extra,
  });
  return run.id;
}

/** The delegation's tool result (the parent's), parsed. */
async function crewResult(d: Deployment, runId: string, name = 'delegate_parallel'): Promise<Entry[]> {
  const events = await d.store.readEvents(runId);
  const results = events.filter(
    (e): e is RunEvent<'tool.result'> => e.type === 'tool.result' && e.data.name === name,
  );
  expect(results, 'the delegation has exactly one result').toHaveLength(1);
  return JSON.parse(results[0]?.data.content ?? '[]') as Entry[];
}

const sleepy = (seconds: number): ReplayScript => [
  { toolCalls: [call('bash', { command: `sleep ${seconds}` })] },
  { content: 'slept' },
];

describe('crew', () => {
  it('delegate_parallel: children are runs of their own; the parent waits without a slot and resumes with every result, in order', async () => {
    const d = await deploy('crew-basic');
    await d.startWorker();
    await d.startWorker();
    const parentId = await submitParent(
      d,
      [
        {
          toolCalls: [
            call('delegate_parallel', {
              tasks: [
                { goal: 'write the parser', context: 'the grammar is in docs/' },
                { goal: 'fail on purpose' },
                { goal: 'escalate: the spec is ambiguous' },
                { goal: 'try to ask the user' },
              ],
            }),
          ],
        },
        { content: 'all four reported' },
      ],
      [
        {
          match: 'parser',
          script: [
            { toolCalls: [call('write_file', { path: 'parser.txt', content: 'parsed' })] },
            { content: 'Wrote parser.txt. Found nothing odd.' },
          ],
        },
        // No final turn: the replay runs out and the child fails.
        { match: 'fail', script: [{ toolCalls: [call('list_dir', { path: '.' })] }] },
        { match: 'escalate', script: [{ toolCalls: [call('escalate', { reason: 'Which spec version?' })] }] },
        {
          match: 'ask',
          script: [{ toolCalls: [call('clarify', { question: 'May I?' })] }, { content: 'no clarify here' }],
        },
      ],
    );
    await d.waitForEvent(parentId, 'run.completed', 60_000);
    const entries = await crewResult(d, parentId);
    expect(entries.map((e) => [e.index, e.status])).toEqual([
      [0, 'completed'],
      [1, 'failed'],
      [2, 'escalated'],
      [3, 'completed'],
    ]);
    expect(entries[0]?.summary).toBe('Wrote parser.txt. Found nothing odd.');
    expect(entries[1]?.summary).toContain('ERR_MODEL_REPLAY_EXHAUSTED');
    expect(entries[2]?.summary).toBe('Which spec version?');
    for (const entry of entries) {
      expect(entry.runId).toMatch(/^run_[0-9a-z]{26}_[0-9a-z]{26}$/);
      expect(entry.durationMs).toBeGreaterThanOrEqual(0);
      expect(entry.usage).toHaveProperty('totalTokens');
    }

    // The parent's stream: one child.started and one child.finished per child, then the resume.
    const events = await d.store.readEvents(parentId);
    const started = events.filter((e) => e.type === 'child.started');
    const finished = events.filter((e) => e.type === 'child.finished');
    expect(started.map((e) => e.data)).toEqual(
      entries.map((e, index) => ({
        childRunId: e.runId,
        index,
        goal: [
          'write the parser',
          'fail on purpose',
          'escalate: the spec is ambiguous',
          'try to ask the user',
        ][index],
      })),
    );
    expect(finished).toHaveLength(4);
    expect(new Set(finished.map((e) => (e.data as { childRunId: string }).childRunId))).toEqual(
      new Set(entries.map((e) => e.runId)),
    );
    // The parent went on only after the last child reported.
    const lastFinished = events.lastIndexOf(finished.at(-1) as RunEvent);
    const resumed = events.findIndex((e, i) => i > lastFinished && e.type === 'attempt.started');
    expect(resumed).toBeGreaterThan(lastFinished);

    // Children are runs: records with their parent, root and depth; the parent lists them.
    const parent = await d.store.get(parentId);
    expect(parent?.children?.map((c) => [c.id, c.index, c.status, c.outcome])).toEqual(
      entries.map((e) => [e.runId, e.index, e.status === 'escalated' ? 'completed' : e.status, e.status]),
    );
    const child = await d.store.get(entries[0]?.runId as string);
    expect(child).toMatchObject({ parentRunId: parentId, rootRunId: parentId, depth: 1, tenant: TENANT });
    // Children work in the parent's workspace.
    const wrote = await d.store.readEvents(entries[0]?.runId as string);
    expect(wrote.some((e) => e.type === 'tool.result' && e.data.ok)).toBe(true);
    // A child has no clarify (no user to ask) and, at the default depth, no delegation.
    const asked = await d.store.readEvents(entries[3]?.runId as string);
    const clarify = asked.find((e) => e.type === 'tool.result');
    expect(clarify?.data).toMatchObject({ name: 'clarify', ok: false });
    expect((clarify as RunEvent<'tool.result'>).data.content).toContain('There is no tool named "clarify"');
  }, 90_000);

  it('a child cancelled by request reports cancelled, and the parent goes on', async () => {
    const d = await deploy('crew-cancel-child');
    await d.startWorker();
    const parentId = await submitParent(
      d,
      [{ toolCalls: [call('delegate_task', { goal: 'sleep a while' })] }, { content: 'parent done' }],
      [{ script: sleepy(30) }],
    );
    const started = await d.waitForEvent(parentId, 'child.started');
    const childId = (started.data as { childRunId: string }).childRunId;
    await until(async () => (await d.store.get(childId))?.status === 'running', 'the child to run');
    expect((await d.store.get(parentId))?.status).toBe('waiting_for_children');
    await d.service.cancel(TENANT, childId);
    await d.waitForEvent(parentId, 'run.completed', 30_000);
    const [entry] = await crewResult(d, parentId, 'delegate_task');
    expect(entry).toMatchObject({ runId: childId, status: 'cancelled' });
  }, 60_000);

  it('a child past TETHER_CREW_CHILD_TIMEOUT_MS is ended as timed_out by its parent', async () => {
    const d = await deploy('crew-timeout');
    await d.startWorker({ TETHER_CREW_CHILD_TIMEOUT_MS: '1500' });
    const parentId = await submitParent(
      d,
      [{ toolCalls: [call('delegate_task', { goal: 'take forever' })] }, { content: 'went on' }],
      [{ script: sleepy(60) }],
    );
    await d.waitForEvent(parentId, 'run.completed', 30_000);
    const [entry] = await crewResult(d, parentId, 'delegate_task');
    expect(entry?.status).toBe('timed_out');
    expect(entry?.summary).toContain('ERR_CREW_CHILD_TIMEOUT');
    const child = await d.store.get(entry?.runId as string);
    expect(child?.status).toBe('failed');
    expect(child?.error?.code).toBe('ERR_CREW_CHILD_TIMEOUT');
  }, 60_000);

  it('a child whose records are removed (retention) is reported failed, and the parent goes on', async () => {
    const d = await deploy('crew-gone');
    await d.startWorker({ TETHER_CREW_CHILD_TIMEOUT_MS: '4000' });
    const parentId = await submitParent(
      d,
      [{ toolCalls: [call('delegate_task', { goal: 'vanish' })] }, { content: 'went on' }],
      [{ script: sleepy(2) }],
    );
    const started = await d.waitForEvent(parentId, 'child.started');
    const childId = (started.data as { childRunId: string }).childRunId;
    await until(async () => (await d.store.get(childId))?.status === 'running', 'the child to run');
    const keys = d.keys.run(childId);
    await d.redis.del(keys.record, keys.events, keys.checkpoint, keys.spec);
    await d.waitForEvent(parentId, 'run.completed', 30_000);
    const [entry] = await crewResult(d, parentId, 'delegate_task');
    expect(entry).toMatchObject({ runId: childId, status: 'failed' });
    expect(entry?.summary).toContain('ERR_CREW_CHILD_GONE');
  }, 60_000);

  it('cancelling a parent cancels its children', async () => {
    const d = await deploy('crew-cancel-parent');
    await d.startWorker();
    const parentId = await submitParent(
      d,
      [
        { toolCalls: [call('delegate_parallel', { tasks: [{ goal: 'a' }, { goal: 'b' }] })] },
        { content: 'never' },
      ],
      [{ script: sleepy(30) }],
    );
    await d.waitForEvent(parentId, (e) => e.type === 'child.started' && e.data.index === 1);
    await d.service.cancel(TENANT, parentId);
    const ids = await d.store.childIds(parentId);
    expect(ids).toHaveLength(2);
    await until(async () => {
      const children = await d.store.getMany(ids);
      return children.every((child) => child?.status === 'cancelled');
    }, 'every child to be cancelled');
    // The parent ends once its children have reported their ends (it may be waiting for the last report).
    await d.waitForEvent(parentId, 'run.cancelled');
    expect((await d.store.get(parentId))?.status).toBe('cancelled');
  }, 60_000);

  it('limits: a longer list than TETHER_CREW_MAX_PARALLEL and more children than TETHER_CREW_MAX_CHILDREN are refused with a message', async () => {
    const d = await deploy('crew-limits');
    await d.startWorker({ TETHER_CREW_MAX_PARALLEL: '2', TETHER_CREW_MAX_CHILDREN: '3' });
    const three = { tasks: [{ goal: 'x1' }, { goal: 'x2' }, { goal: 'x3' }] };
    const two = { tasks: [{ goal: 'y1' }, { goal: 'y2' }] };
    const parentId = await submitParent(
      d,
      [
        { toolCalls: [call('delegate_parallel', three)] },
        { toolCalls: [call('delegate_parallel', two)] },
        { toolCalls: [call('delegate_parallel', two)] },
        { content: 'done' },
      ],
      [{ script: [{ content: 'ok' }] }],
    );
    await d.waitForEvent(parentId, 'run.completed', 30_000);
    const results = (await d.store.readEvents(parentId)).filter(
      (e): e is RunEvent<'tool.result'> => e.type === 'tool.result',
    );
    expect(results.map((e) => e.data.ok)).toEqual([false, true, false]);
    expect(results[0]?.data.content).toMatch(/at most 2/);
    expect(results[2]?.data.content).toMatch(/only 1 more/);
    expect(await d.store.childIds(parentId)).toHaveLength(2);
  }, 60_000);

  it('TETHER_CREW_MAX_DEPTH 2: a child delegates too, and the whole tree shares its root', async () => {
    const d = await deploy('crew-depth');
    await d.startWorker({ TETHER_CREW_MAX_DEPTH: '2' });
    const parentId = await submitParent(
      d,
      [{ toolCalls: [call('delegate_task', { goal: 'lead a sub-team' })] }, { content: 'root done' }],
      [
        {
          script: [
            { toolCalls: [call('delegate_task', { goal: 'grandchild work' })] },
            { content: 'sub-team done' },
          ],
          children: [{ script: [{ content: 'grandchild done' }] }],
        },
      ],
    );
    await d.waitForEvent(parentId, 'run.completed', 30_000);
    const [entry] = await crewResult(d, parentId, 'delegate_task');
    expect(entry).toMatchObject({ status: 'completed', summary: 'sub-team done' });
    const [grandchildId] = await d.store.childIds(entry?.runId as string);
    const grandchild = await d.store.get(grandchildId as string);
    expect(grandchild).toMatchObject({
      parentRunId: entry?.runId,
      rootRunId: parentId,
      depth: 2,
      status: 'completed',
    });
  }, 60_000);
});

describe('crew crash safety', () => {
  it("the parent's worker is killed with -9 while its children run: they go on, and the parent resumes with every result once", async () => {
    const d = await deploy('crew-kill');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const parentId = await submitParent(
      d,
      [
        { toolCalls: [call('delegate_parallel', { tasks: [{ goal: 'one' }, { goal: 'two' }] })] },
        { content: 'parent resumed' },
      ],
      [{ script: sleepy(2) }],
    );
    await d.waitForEvent(parentId, (e) => e.type === 'child.started' && e.data.index === 1);
    await a.stop('SIGKILL');
    await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    await d.waitForEvent(parentId, 'run.completed', 60_000);
    const entries = await crewResult(d, parentId);
    expect(entries.map((e) => e.status)).toEqual(['completed', 'completed']);
    // Exactly once: one child.finished per child, one result in the checkpoint.
    const events = await d.store.readEvents(parentId);
    expect(events.filter((e) => e.type === 'child.finished')).toHaveLength(2);
    const checkpoint = JSON.parse((await d.store.loadCheckpoint(parentId)) ?? '{}') as {
      messages: { role: string; content?: string }[];
    };
    const tools = checkpoint.messages.filter((m) => m.role === 'tool');
    expect(tools).toHaveLength(1);
  }, 90_000);

  it('a child that ends while no worker is alive: the parent resumes once a worker starts', async () => {
    const d = await deploy('crew-no-worker');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const parentId = await submitParent(
      d,
      [{ toolCalls: [call('delegate_task', { goal: 'sleep' })] }, { content: 'parent resumed' }],
      [{ script: sleepy(30) }],
    );
    const started = await d.waitForEvent(parentId, 'child.started');
    const childId = (started.data as { childRunId: string }).childRunId;
    await until(async () => (await d.store.get(childId))?.status === 'running', 'the child to run');
    await a.stop('SIGKILL');
    // No worker: the child is cancelled (it ends when a worker next looks at it).
    await d.service.cancel(TENANT, childId);
    await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    await d.waitForEvent(parentId, 'run.completed', 60_000);
    const [entry] = await crewResult(d, parentId, 'delegate_task');
    expect(entry).toMatchObject({ runId: childId, status: 'cancelled' });
  }, 90_000);
});
