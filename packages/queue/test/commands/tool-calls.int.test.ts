import { describe, expect, it } from 'vitest';
import { postToolOutput, requestToolCalls, resolveToolCalls } from '../../src/scripts.js';
import { RunFixture, useRedis } from './fixture.js';

const redis = useRedis();
const OWNER = 'w1:t1';
const LATER = Date.now() + 3_600_000;

const call = (requestId: string) =>
  JSON.stringify({
    requestId,
    callId: `call_${requestId}`,
    name: 'lookup',
    arguments: { q: 'é "x"' },
    expiresAt: new Date(LATER).toISOString(),
  });

function request(run: RunFixture, ids: string[], token = OWNER, deadline = LATER) {
  return requestToolCalls.run(redis, {
    keys: run.keys,
    args: {
      ...run.base,
      token,
      deadline,
      ttl: 3_600,
      callCount: ids.length,
      rest: [...ids.flatMap((id) => [id, call(id)]), 'message.delta', '{"text":"before"}'],
    },
  });
}

function post(run: RunFixture, requestId: string, output = 'out', isError = false) {
  return postToolOutput.run(redis, {
    keys: run.keys,
    args: {
      ...run.base,
      requestId,
      output: JSON.stringify({ output, isError }),
      isError: isError ? '1' : '0',
    },
  });
}

function resolve(run: RunFixture, ids: string[], token = OWNER) {
  return resolveToolCalls.run(redis, {
    keys: run.keys,
    args: { ...run.base, token, requestIds: ids },
  });
}

/** A run owned by OWNER that waits on calls `ids` (due at `deadline`). */
async function waiting(ids = ['tcr_a', 'tcr_b'], deadline = LATER): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'running', owner: OWNER });
  expect(await request(run, ids, OWNER, deadline)).toBe(1);
  return run;
}

describe('requestToolCalls', () => {
  it('records every call as pending, appends the events before it, then tool.requested per call, and waits', async () => {
    const run = await waiting();
    expect((await run.record()).status).toBe('waiting_for_input');
    const stored = await redis.hgetall(run.keys.toolCalls);
    expect(stored).toMatchObject({
      deadline: String(LATER),
      pending: '2',
      order: 'tcr_a tcr_b',
      's:tcr_a': 'pending',
      's:tcr_b': 'pending',
      'q:tcr_a': call('tcr_a'),
    });
    expect(await redis.ttl(run.keys.toolCalls)).toBeGreaterThan(3_000);
    expect((await run.events()).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'message.delta', data: { text: 'before' } },
      { type: 'tool.requested', data: JSON.parse(call('tcr_a')) },
      { type: 'tool.requested', data: JSON.parse(call('tcr_b')) },
    ]);
    expect(await run.logIsCompact()).toBe(true);
  });

  it('done again for the same calls, records nothing twice', async () => {
    const run = await waiting();
    await post(run, 'tcr_a');
    await run.seed({ status: 'running' });
    expect(await request(run, ['tcr_a', 'tcr_b'])).toBe(2);
    expect((await run.record()).status).toBe('waiting_for_input');
    expect(await redis.hget(run.keys.toolCalls, 's:tcr_a')).toBe('received');
    expect((await run.events()).filter((e) => e.type === 'tool.requested')).toHaveLength(2);
  });

  it("replaces an earlier turn's calls, keeping only their states: a late output for one is still 409, not unknown", async () => {
    const run = await waiting(['tcr_a']);
    await post(run, 'tcr_a');
    await run.seed({ status: 'running' });
    expect(await request(run, ['tcr_c'])).toBe(1);
    const stored = await redis.hgetall(run.keys.toolCalls);
    expect(stored['q:tcr_a']).toBeUndefined();
    expect(stored['s:tcr_a']).toBe('received');
    expect(stored).toMatchObject({ pending: '1', order: 'tcr_c', 's:tcr_c': 'pending' });
    expect(await redis.exists(run.keys.toolOutputs)).toBe(0);
    expect(await post(run, 'tcr_a')).toBe('received');
  });

  it('refuses a worker that does not own the run, a run with a cancel requested, and an ended one', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: OWNER });
    expect(await run.unchanged(() => request(run, ['tcr_a'], 'w9:t9'))).toBe(0);
    await run.seed({ cancelRequested: '1' });
    expect(await run.unchanged(() => request(run, ['tcr_a']))).toBe(-1);
    const ended = new RunFixture(redis);
    await ended.seed({ status: 'completed', owner: OWNER });
    expect(await ended.unchanged(() => request(ended, ['tcr_a']))).toBe(-1);
  });
});

describe('postToolOutput', () => {
  it('takes the first output: received, stored, tool.output_received; the run still waits for the other call', async () => {
    const run = await waiting();
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      post(run, 'tcr_a', 'sunny, "21°C"', true),
    );
    expect(result).toBe('ok');
    expect((await run.record()).status).toBe('waiting_for_input');
    expect(await redis.hget(run.keys.toolCalls, 's:tcr_a')).toBe('received');
    expect(await redis.hget(run.keys.toolCalls, 'pending')).toBe('1');
    expect(JSON.parse((await redis.hget(run.keys.toolOutputs, 'tcr_a')) ?? '')).toEqual({
      output: 'sunny, "21°C"',
      isError: true,
    });
    expect(await redis.ttl(run.keys.toolOutputs)).toBeGreaterThan(3_000);
    const last = (await run.events()).at(-1);
    expect(last).toMatchObject({ type: 'tool.output_received', data: { requestId: 'tcr_a', isError: true } });
    expect(messages).toHaveLength(1);
  });

  it('the last output queues the run', async () => {
    const run = await waiting();
    expect(await post(run, 'tcr_b')).toBe('ok');
    expect(await post(run, 'tcr_a')).toBe('last');
    expect((await run.record()).status).toBe('queued');
    expect((await run.events()).filter((e) => e.type === 'tool.output_received')).toHaveLength(2);
  });

  it('refuses a second output, keeping the first', async () => {
    const run = await waiting();
    await post(run, 'tcr_a', 'first');
    expect(await run.unchanged(() => post(run, 'tcr_a', 'second'))).toBe('received');
    expect(await redis.hget(run.keys.toolOutputs, 'tcr_a')).toContain('first');
  });

  it("refuses an output past the deadline (by Redis's clock), and after the call timed out", async () => {
    const run = await waiting(['tcr_a'], Date.now() - 1_000);
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('expired');
    await run.seed({ status: 'running' }); // Claimed: the worker that times the calls out.
    await resolve(run, ['tcr_a']);
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('timed_out');
  });

  it.each(['completed', 'failed', 'cancelled'])('refuses an output once the run is %s', async (status) => {
    const run = await waiting();
    await run.seed({ status });
    expect(await run.unchanged(() => post(run, 'tcr_a'))).toBe('ended');
  });

  it('refuses an output for an unknown request, and for a run that does not exist', async () => {
    const run = await waiting();
    expect(await run.unchanged(() => post(run, 'tcr_zzz'))).toBe('no_request');
    const gone = new RunFixture(redis);
    expect(await gone.unchanged(() => post(gone, 'tcr_a'))).toBe('no_run');
  });
});

describe('resolveToolCalls', () => {
  it('before the deadline with a call still waiting: pending, nothing changed', async () => {
    const run = await waiting();
    await post(run, 'tcr_a');
    expect(await run.unchanged(() => resolve(run, ['tcr_a', 'tcr_b']))).toEqual(['pending', String(LATER)]);
  });

  it('with every output in: each call with its output, in call order', async () => {
    const run = await waiting();
    await post(run, 'tcr_b', 'B', true);
    await post(run, 'tcr_a', 'A');
    expect(await resolve(run, ['tcr_a', 'tcr_b'])).toEqual([
      'ready',
      'tcr_a',
      'received',
      JSON.stringify({ output: 'A', isError: false }),
      'tcr_b',
      'received',
      JSON.stringify({ output: 'B', isError: true }),
    ]);
  });

  it('past the deadline, the owner times out the calls still waiting (tool.timed_out each), once', async () => {
    const run = await waiting(['tcr_a', 'tcr_b'], Date.now() + 300);
    await post(run, 'tcr_a', 'A');
    await new Promise((resolve) => setTimeout(resolve, 400));
    await run.seed({ status: 'running' });
    expect(await run.unchanged(() => resolve(run, ['tcr_a', 'tcr_b'], 'w9:t9'))).toEqual(['not_owner']);
    const reply = await resolve(run, ['tcr_a', 'tcr_b']);
    expect(reply).toEqual(['ready', 'tcr_a', 'received', expect.any(String), 'tcr_b', 'timed_out', '']);
    expect(await resolve(run, ['tcr_a', 'tcr_b'])).toEqual(reply);
    const timedOut = (await run.events()).filter((e) => e.type === 'tool.timed_out');
    expect(timedOut.map((e) => e.data)).toEqual([{ requestId: 'tcr_b' }]);
  });

  it('answers missing for calls that were never recorded', async () => {
    const run = await waiting(['tcr_a']);
    expect(await run.unchanged(() => resolve(run, ['tcr_a', 'tcr_x']))).toEqual(['missing']);
    const none = new RunFixture(redis);
    expect(await resolve(none, ['tcr_a'])).toEqual(['missing']);
  });
});
