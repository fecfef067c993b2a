import { createHash } from 'node:crypto';
import { newChildRunId, newId } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { RunStore } from '../src/runs/index.js';
import { migrationMarker, waitOfCheckpoint } from '../src/runs/waitpoint-migration.js';

/**
 * Runs that wait across the upgrade to the waitpoint (on a Redis Cluster too: each run's keys in
 * its slot): what the release before it left (a question's `pending` and `clarify:<id>`, the
 * `tool-calls` and `tool-outputs` of client calls, a parent's `delegation`), written here as that
 * release's scripts wrote it, is moved into each run's waitpoint, and the run goes on from there.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'waitpoint-migration', onError: () => {} });
afterAll(() => redis.quit());
const TOKEN = 'w1:t1';
const hash = (token: string) => createHash('sha256').update(token).digest('hex');

/** A store on a deployment of its own (the marker is per deployment). */
function deployment() {
  const keys = createKeys(uniquePrefix('migrate'));
  return { keys, store: new RunStore({ redis, keys }) };
}

/** A run in `status`, with `checkpoint` (JSON) stored as its checkpoint. */
async function seedRun(
  d: ReturnType<typeof deployment>,
  status: string,
  checkpoint: object,
  runId = newId('run'),
) {
  await d.store.create({ id: runId, tenant: 't', spec: { input: 'x' }, createdAtMs: Date.now() });
  const keys = d.keys.run(runId);
  await redis.hset(keys.record, 'status', status, 'owner', TOKEN);
  await redis.set(keys.checkpoint, JSON.stringify({ version: 1, messages: [], ...checkpoint }));
  return runId;
}

function question(requestId: string, expiresAtMs: number) {
  return {
    requestId,
    question: 'Which colour?',
    choices: ['red', 'blue'],
    expiresAt: new Date(expiresAtMs).toISOString(),
  };
}

describe('moving the waits of the release before the waitpoint', () => {
  it('a question still pending: its answer tokens come along, and it is answered as any', async () => {
    const d = deployment();
    const expiresAt = Date.now() + 60_000;
    const asked = question(newId('clr'), expiresAt);
    const runId = await seedRun(d, 'waiting_for_input', {
      waitpoint: { requests: [{ kind: 'question', callId: 'call_1', ...asked }] },
    });
    const old = d.keys.run(runId).legacy;
    await redis.hset(old.clarify(asked.requestId), {
      requestId: asked.requestId,
      status: 'pending',
      expiresAt,
      [`t:${hash('wat_a')}`]: 'ok',
    });
    await redis.expire(old.clarify(asked.requestId), 600);
    await redis.set(old.pending, JSON.stringify(asked));

    expect(await d.store.migrateWaitpoints()).toBe(1);
    expect(await redis.exists(old.pending, old.clarify(asked.requestId))).toBe(0);
    const waitpoint = await redis.hgetall(d.keys.run(runId).waitpoint);
    expect(waitpoint).toMatchObject({
      id: asked.requestId,
      deadline: String(expiresAt),
      kind: 'question',
      pending: '1',
      [`s:${asked.requestId}`]: 'pending',
      [`t:${asked.requestId}:${hash('wat_a').slice(0, 24)}`]: 'ok',
    });
    expect(JSON.parse(waitpoint[`q:${asked.requestId}`] ?? '')).toEqual(asked);
    // Like a live run's other keys, the waitpoint does not expire before the run ends.
    expect(await redis.ttl(d.keys.run(runId).waitpoint)).toBe(-1);
    // The run record reads its question from the waitpoint.
    expect((await d.store.get(runId))?.pendingClarify).toEqual(asked);
    expect(await d.store.answer(runId, asked.requestId, 'blue', hash('wat_a'))).toBe('ok');
    expect((await d.store.get(runId))?.status).toBe('queued');
    await redis.hset(d.keys.run(runId).record, 'status', 'running');
    expect(await d.store.expireWaitpoint(runId, asked.requestId, [asked.requestId], TOKEN)).toEqual({
      state: 'ready',
      outcomes: [{ requestId: asked.requestId, state: 'answered', result: 'blue' }],
    });
  });

  it('a question answered before the upgrade, not yet taken up: its answer and its used token come along', async () => {
    const d = deployment();
    const asked = question(newId('clr'), Date.now() + 60_000);
    // A checkpoint of the release before the waitpoint's checkpoint field.
    const runId = await seedRun(d, 'queued', { pendingClarify: { ...asked, callId: 'call_1' } });
    const old = d.keys.run(runId).legacy;
    // Answered: the pending string went, the request says so.
    await redis.hset(old.clarify(asked.requestId), {
      requestId: asked.requestId,
      status: 'answered',
      expiresAt: Date.parse(asked.expiresAt),
      answer: 'red',
      [`t:${hash('wat_used')}`]: 'used',
      [`t:${hash('wat_spare')}`]: 'ok',
    });

    expect(await d.store.migrateWaitpoints()).toBe(1);
    expect(await d.store.answer(runId, asked.requestId, 'again', hash('wat_used'))).toBe('token_used');
    expect(await d.store.answer(runId, asked.requestId, 'again', hash('wat_spare'))).toBe('answered');
    expect(await d.store.answer(runId, asked.requestId, 'again')).toBe('answered');
    await redis.hset(d.keys.run(runId).record, 'status', 'running');
    expect(await d.store.expireWaitpoint(runId, asked.requestId, [asked.requestId], TOKEN)).toEqual({
      state: 'ready',
      outcomes: [{ requestId: asked.requestId, state: 'answered', result: 'red' }],
    });
  });

  it("client tool calls: an output received comes along, an earlier turn's state stays, and the last output queues the run", async () => {
    const d = deployment();
    const deadline = Date.now() + 60_000;
    const calls = ['tcr_a', 'tcr_b'].map((requestId, i) => ({
      requestId,
      callId: `call_${i}`,
      name: 'lookup',
      arguments: { i },
      expiresAt: new Date(deadline).toISOString(),
    }));
    const runId = await seedRun(d, 'waiting_for_input', {
      waitpoint: { requests: calls.map((call) => ({ kind: 'tool_output', ...call })) },
    });
    const old = d.keys.run(runId).legacy;
    await redis.hset(old.toolCalls, {
      deadline,
      pending: 1,
      order: 'tcr_a tcr_b',
      'q:tcr_a': JSON.stringify(calls[0]),
      's:tcr_a': 'received',
      'q:tcr_b': JSON.stringify(calls[1]),
      's:tcr_b': 'pending',
      's:tcr_earlier': 'timed_out',
    });
    await redis.hset(old.toolOutputs, 'tcr_a', JSON.stringify({ output: 'sunny', isError: false }));

    expect(await d.store.migrateWaitpoints()).toBe(1);
    expect(await redis.exists(old.toolCalls, old.toolOutputs)).toBe(0);
    expect((await d.store.get(runId))?.pendingToolCalls).toEqual([calls[1]]);
    expect(await d.store.postToolOutput(runId, 'tcr_earlier', 'late', false)).toBe('timed_out');
    expect(await d.store.postToolOutput(runId, 'tcr_a', 'again', false)).toBe('received');
    expect(await d.store.postToolOutput(runId, 'tcr_b', 'windy', true)).toBe('last');
    expect((await d.store.get(runId))?.status).toBe('queued');
    await redis.hset(d.keys.run(runId).record, 'status', 'running');
    const state = await d.store.expireWaitpoint(runId, 'tcr_a', ['tcr_a', 'tcr_b'], TOKEN);
    expect(state).toEqual({
      state: 'ready',
      outcomes: [
        {
          requestId: 'tcr_a',
          state: 'received',
          result: JSON.stringify({ output: 'sunny', isError: false }),
        },
        { requestId: 'tcr_b', state: 'received', result: JSON.stringify({ output: 'windy', isError: true }) },
      ],
    });
  });

  it('a delegation: a child reported before the upgrade stays reported, and the last one wakes the parent', async () => {
    const d = deployment();
    const parent = newId('run');
    const children = [newChildRunId(parent), newChildRunId(parent)];
    await seedRun(
      d,
      'waiting_for_children',
      { waitpoint: { requests: [{ kind: 'children', requestId: 'call_1', callId: 'call_1', tasks: [] }] } },
      parent,
    );
    const result = {
      index: 0,
      runId: children[0],
      status: 'completed',
      summary: 'done',
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      durationMs: 5,
    };
    const old = d.keys.run(parent).legacy;
    await redis.hset(old.delegation, {
      call: 'call_1 x',
      size: 2,
      pending: 1,
      deadline: Date.now() + 60_000,
      [`c:${children[1]}`]: 1,
      [`c:${children[0]}`]: 0,
      [`r:${children[0]}`]: JSON.stringify(result),
    });

    expect(await d.store.migrateWaitpoints()).toBe(1);
    expect(await redis.exists(old.delegation)).toBe(0);
    const delegation = await d.store.delegation(parent);
    expect(delegation?.call).toBe('call_1 x');
    expect(delegation?.pending).toBe(1);
    expect([...(delegation?.children ?? [])]).toEqual([
      [children[0], 0],
      [children[1], 1],
    ]);
    expect(delegation?.results.get(children[0] as string)).toEqual(result);
    const outcome = { status: 'completed' as const, summary: 'also done', usage: result.usage };
    const second = { id: children[1] as string, call: 'call_1 x', index: 1, durationMs: 7 };
    expect(
      await d.store.reportChild(parent, { ...second, id: children[0] as string, index: 0 }, outcome),
    ).toBe(false);
    expect(await d.store.reportChild(parent, second, outcome)).toBe(true);
    expect((await d.store.delegation(parent))?.results.get(children[1] as string)?.summary).toBe('also done');
  });

  it('leaves ended runs, runs with a waitpoint and runs waiting on nothing alone, and looks once per deployment', async () => {
    const d = deployment();
    const asked = question(newId('clr'), Date.now() + 60_000);
    const checkpoint = { waitpoint: { requests: [{ kind: 'question', callId: 'call_1', ...asked }] } };
    const ended = await seedRun(d, 'cancelled', checkpoint);
    const moved = await seedRun(d, 'waiting_for_input', checkpoint);
    const idle = await seedRun(d, 'running', {});
    for (const runId of [ended, moved, idle]) {
      const old = d.keys.run(runId).legacy;
      await redis.hset(old.clarify(asked.requestId), {
        requestId: asked.requestId,
        status: 'pending',
        expiresAt: 1,
      });
      await redis.set(old.pending, JSON.stringify(asked));
    }
    await redis.hset(d.keys.run(moved).waitpoint, 'id', 'clr_new', 'pending', 0);

    expect(await d.store.migrateWaitpoints()).toBe(0);
    for (const runId of [ended, moved, idle])
      expect(await redis.exists(d.keys.run(runId).legacy.pending)).toBe(1);
    expect(await redis.hgetall(d.keys.run(moved).waitpoint)).toEqual({ id: 'clr_new', pending: '0' });
    expect(await redis.exists(d.keys.run(ended).waitpoint)).toBe(0);
    expect(await redis.exists(d.keys.run(idle).waitpoint)).toBe(0);
    expect(Number(await redis.get(migrationMarker(d.store)))).toBeGreaterThan(0);

    // Marked done: a run left in the old keys after that is not looked for again.
    const late = await seedRun(d, 'waiting_for_input', checkpoint);
    await redis.set(d.keys.run(late).legacy.pending, JSON.stringify(asked));
    await redis.hset(d.keys.run(late).legacy.clarify(asked.requestId), 'status', 'pending', 'expiresAt', 1);
    expect(await d.store.migrateWaitpoints()).toBe(0);
    expect(await redis.exists(d.keys.run(late).waitpoint)).toBe(0);
  });
});

describe('waitOfCheckpoint', () => {
  it("reads the wait of either release's checkpoint, and nothing of one that waits on nothing or is not JSON", () => {
    const asked = question('clr_1', 0);
    const expected = { kind: 'question', question: JSON.stringify(asked) };
    const ofQuestion = { waitpoint: { requests: [{ kind: 'question', callId: 'c', ...asked }] } };
    expect(waitOfCheckpoint(JSON.stringify(ofQuestion))).toEqual(expected);
    expect(waitOfCheckpoint(JSON.stringify({ pendingClarify: { ...asked, callId: 'c' } }))).toEqual(expected);
    const calls = [{ kind: 'tool_output', requestId: 'tcr_1' }];
    expect(waitOfCheckpoint(JSON.stringify({ waitpoint: { requests: calls } }))?.kind).toBe('tool_output');
    expect(waitOfCheckpoint(JSON.stringify({ pendingToolCalls: [{ requestId: 'tcr_1' }] }))?.kind).toBe(
      'tool_output',
    );
    const children = [{ kind: 'children', requestId: 'call_1' }];
    expect(waitOfCheckpoint(JSON.stringify({ waitpoint: { requests: children } }))?.kind).toBe('children');
    expect(waitOfCheckpoint(JSON.stringify({ pendingDelegation: { callId: 'call_1' } }))?.kind).toBe(
      'children',
    );
    expect(waitOfCheckpoint(JSON.stringify({ messages: [] }))).toBeUndefined();
    expect(waitOfCheckpoint('{not json')).toBeUndefined();
    expect(waitOfCheckpoint(null)).toBeUndefined();
  });
});
