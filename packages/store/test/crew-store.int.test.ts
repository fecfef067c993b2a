import { newChildRunId, newId, newSessionRunId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { CHILD_SUMMARY_MAX_CHARS, RunStore } from '../src/runs/index.js';

/**
 * The crew's steps against real scripts (on a Redis Cluster too: a tree
 * keeps its keys in its root's hash slot): a delegation recorded once, each
 * child's end reported to its parent once in the step that ends it, the
 * repairs for a child that ended without reporting or is gone.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'crew-store', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('crew'));
const store = new RunStore({ redis, keys });
const woken: string[] = [];
store.onParentReady(async (id) => {
  woken.push(id);
});
const TOKEN = 'w1:t1';

/** A running parent owned by TOKEN, with `count` children created for delegation `call`. */
async function parentWithChildren(
  count: number,
  root = newId('run'),
  call = 'call_1',
  goal = (index: number) => `goal ${index}`,
) {
  await store.create({ id: root, tenant: 't', spec: { input: 'lead' }, createdAtMs: Date.now() });
  await store.claim(root, TOKEN, 1, 'w1');
  const children = Array.from({ length: count }, (_, index) => ({
    id: newChildRunId(root),
    index,
    goal: goal(index),
  }));
  const deadlineMs = Date.now() + 60_000;
  for (const child of children) {
    await store.create({
      id: child.id,
      tenant: 't',
      spec: { input: child.goal },
      createdAtMs: Date.now(),
      crew: { parentRunId: root, rootRunId: root, depth: 1, call, index: child.index, deadlineMs },
    });
  }
  const recorded = await store.delegate(root, TOKEN, { call, deadlineMs, maxChildren: 50, children });
  return { root, children, recorded };
}

describe('crew store', () => {
  it('records a delegation once: the parent waits for its children, with child.started each', async () => {
    const { root, children, recorded } = await parentWithChildren(2);
    expect(recorded).toBe('recorded');
    const record = await store.get(root);
    expect(record?.status).toBe('waiting_for_children');
    expect(record?.children).toEqual(children.map((c) => ({ id: c.id, index: c.index, status: 'queued' })));
    const started = (await store.readEvents(root)).filter((e) => e.type === 'child.started');
    expect(started.map((e) => e.data)).toEqual(
      children.map((c) => ({ childRunId: c.id, index: c.index, goal: c.goal })),
    );
    // Not running (it waits for its children): the owner's step is refused as for a lost run.
    await expect(
      store.delegate(root, TOKEN, { call: 'call_1', deadlineMs: 0, maxChildren: 50, children }),
    ).rejects.toMatchObject({ code: 'ERR_RUN_NOT_OWNER' });
    // Again (a worker that took the run over, its claim first, redoes the step): nothing changes.
    const again = 'w2:t2';
    await store.claim(root, again, 2, 'w2');
    expect(
      await store.delegate(root, again, { call: 'call_1', deadlineMs: 0, maxChildren: 50, children }),
    ).toBe('again');
    expect(await store.childIds(root)).toEqual(children.map((c) => c.id));
    expect((await store.readEvents(root)).filter((e) => e.type === 'child.started')).toHaveLength(2);
    // Another worker's token, or past the life limit, is refused.
    await expect(
      store.delegate(root, 'w9:t9', { call: 'call_2', deadlineMs: 0, maxChildren: 50, children }),
    ).rejects.toMatchObject({ code: 'ERR_RUN_NOT_OWNER' });
    await store.claim(root, again, 3, 'w2');
    await expect(
      store.delegate(root, again, { call: 'call_2', deadlineMs: 0, maxChildren: 3, children }),
    ).rejects.toMatchObject({ code: 'ERR_CREW_MAX_CHILDREN' });
  });

  it('lists a child on its parent from its creation, before the delegation, and once after it', async () => {
    const root = newId('run');
    await store.create({ id: root, tenant: 't', spec: { input: 'lead' }, createdAtMs: Date.now() });
    await store.claim(root, TOKEN, 1, 'w1');
    const deadlineMs = Date.now() + 60_000;
    const children = [0, 1].map((index) => ({ id: newChildRunId(root), index, goal: `goal ${index}` }));
    const crew = (index: number) => ({
      parentRunId: root,
      rootRunId: root,
      depth: 1,
      call: 'c',
      index,
      deadlineMs,
    });
    await store.createMany(
      children.map((c) => ({
        id: c.id,
        tenant: 't',
        spec: { input: c.goal },
        createdAtMs: Date.now(),
        crew: crew(c.index),
      })),
    );
    // A worker that dies here leaves children a cancel of the parent still finds.
    expect(await store.childIds(root)).toEqual(children.map((c) => c.id));
    expect(await store.delegate(root, TOKEN, { call: 'c', deadlineMs, maxChildren: 50, children })).toBe(
      'recorded',
    );
    expect(await store.childIds(root)).toEqual(children.map((c) => c.id));
    // A child created by a worker of an earlier release (not on the list) joins it at the delegation.
    await redis.lrem(keys.run(root).children, 0, children[1]?.id as string);
    await redis.hdel(keys.run(root).waitpoint, 'id');
    await store.claim(root, TOKEN, 2, 'w1');
    expect(await store.delegate(root, TOKEN, { call: 'c2', deadlineMs, maxChildren: 50, children })).toBe(
      'recorded',
    );
    expect(await store.childIds(root)).toEqual(children.map((c) => c.id));
  });

  it('records a goal with a lone surrogate (as a model may write one), as U+FFFD in child.started', async () => {
    const { root, recorded } = await parentWithChildren(
      1,
      newId('run'),
      'call_1',
      () => 'fix \ud83d the bug',
    );
    expect(recorded).toBe('recorded');
    const started = (await store.readEvents(root)).filter((e) => e.type === 'child.started');
    expect(started.map((e) => (e.data as { goal: string }).goal)).toEqual(['fix \ufffd the bug']);
  });

  it("reports each child's end to its parent in the step that ends it, once, and the last wakes the parent", async () => {
    const { root, children } = await parentWithChildren(2);
    const [first, second] = children as [(typeof children)[0], (typeof children)[0]];
    const long = 'x'.repeat(CHILD_SUMMARY_MAX_CHARS + 500);
    const usage = { inputTokens: 3, outputTokens: 4, totalTokens: 7 };
    expect(
      await store.finalize(first.id, { status: 'completed', output: long, usage }, '', [], [], root),
    ).toBe(true);
    let delegation = await store.delegation(root);
    expect(delegation?.pending).toBe(1);
    const result = delegation?.results.get(first.id);
    expect(result).toMatchObject({ index: 0, runId: first.id, status: 'completed', usage });
    expect(result?.summary.startsWith('x'.repeat(CHILD_SUMMARY_MAX_CHARS))).toBe(true);
    expect(result?.summary).toContain('500 more characters');
    expect(woken).not.toContain(root);
    // The caller does not name the parent: the store reports it from the record.
    await store.finalize(second.id, { status: 'failed', error: { code: 'ERR_X', message: 'broke' } });
    delegation = await store.delegation(root);
    expect(delegation?.pending).toBe(0);
    expect(delegation?.results.get(second.id)).toMatchObject({ status: 'failed', summary: 'ERR_X: broke' });
    expect(woken).toContain(root);
    // Reported once: a repair finds nothing to do.
    expect(await store.reportEnded(second.id)).toBe(false);
    const finished = (await store.readEvents(root)).filter((e) => e.type === 'child.finished');
    expect(finished.map((e) => [e.data.childRunId, e.data.status])).toEqual([
      [first.id, 'completed'],
      [second.id, 'failed'],
    ]);
    expect((await store.get(root))?.children?.map((c) => c.status)).toEqual(['completed', 'failed']);
  });

  it('reports a child that is gone as failed, and an escalation, a cancel and a timeout by their names', async () => {
    const { root, children } = await parentWithChildren(4);
    const [gone, escalated, cancelled, timedOut] = children.map((c) => c.id) as string[];
    await redis.del(keys.run(gone as string).record);
    await store.reportGone(root, gone as string);
    await store.reportGone(root, gone as string);
    expect((await store.delegation(root))?.pending).toBe(3);
    await store.finalize(
      escalated as string,
      { status: 'completed', output: 'which one?', escalated: true },
      '',
      [],
      [],
      root,
    );
    await store.finalize(
      cancelled as string,
      { status: 'cancelled', reason: 'by request' },
      '',
      [],
      [],
      root,
    );
    await store.finalize(
      timedOut as string,
      { status: 'failed', error: { code: 'ERR_CREW_CHILD_TIMEOUT', message: 'too slow' } },
      '',
      [],
      [],
      root,
    );
    const results = (await store.delegation(root))?.results;
    expect(children.map((c) => results?.get(c.id)?.status)).toEqual([
      'failed',
      'escalated',
      'cancelled',
      'timed_out',
    ]);
    expect(results?.get(gone as string)?.summary).toContain('ERR_CREW_CHILD_GONE');
    // The parent lists how each child that is still there ended.
    expect((await store.get(root))?.children?.map((c) => c.outcome)).toEqual([
      'escalated',
      'cancelled',
      'timed_out',
    ]);
  });

  it('a parent that ends drops its delegation: a child that ends later reports nothing', async () => {
    const { root, children } = await parentWithChildren(1);
    await store.finalize(root, { status: 'cancelled' });
    await store.finalize((children[0] as { id: string }).id, { status: 'cancelled' }, '', [], [], root);
    expect(await store.delegation(root)).toBeUndefined();
    const events = await store.readEvents(root);
    expect(events.at(-1)?.type).toBe('run.cancelled');
  });

  it("a child's claim is refused once its parent has ended or is being cancelled", async () => {
    const { root, children } = await parentWithChildren(2);
    const [a, b] = children.map((c) => c.id) as [string, string];
    expect((await store.claim(a, 'w2:t2', 1, 'w2', root)).status).toBe('ok');
    await store.requestCancel(root);
    expect((await store.claim(b, 'w2:t3', 1, 'w2', root)).status).toBe('cancel');
  });

  it("keeps a session's tree in the session's slot", async () => {
    const sessionRun = newSessionRunId(newId('ses'));
    const { root, children } = await parentWithChildren(1, sessionRun);
    await store.finalize(
      (children[0] as { id: string }).id,
      { status: 'completed', output: 'ok' },
      '',
      [],
      [],
      root,
    );
    expect((await store.delegation(root))?.pending).toBe(0);
  });
});
