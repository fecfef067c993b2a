import { newId, newSessionRunId, RUN_STATUSES, type RunStatus } from '@tether/protocol';
import { testRedisUrl, uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys } from '../src/redis/index.js';
import { RunStore } from '../src/runs/index.js';
import { isTerminal, TRANSITIONS, type Transition } from '../src/runs/lifecycle.js';

/**
 * The lifecycle table (lifecycle.ts) run against the scripts: every step from
 * every status, by the owner and by a stranger. A step takes effect exactly
 * when the table says so (the status it leads to, its event last), and
 * otherwise changes nothing.
 */
const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('lifecycle'));
const store = new RunStore({ redis, keys });

const OWNER = 'w1:t1';
const STRANGER = 'w9:t9';
const TOOL_REQUEST = 'tcr_life';
const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

const post = (runId: string) => store.postToolOutput(runId, TOOL_REQUEST, 'out', false);

/**
 * Each step, taken through the store as the API or the worker takes it. Steps of one script that
 * the run's status tells apart share a driver (an output to a run asleep on the last request, or not).
 */
const STEPS: Record<string, (runId: string, token: string) => Promise<unknown>> = {
  claim: (runId) => store.claim(runId, OWNER, 2, 'w1'),
  // Seeded as a session's run with another run ahead of it (see `seed`).
  'wait for the session': (runId) => store.claim(runId, OWNER, 2, 'w1'),
  'save a checkpoint': (runId, token) =>
    store.saveCheckpoint(runId, token, '{}', { todos: [], usage, step: 1 }),
  'wait for input': (runId, token) =>
    store.suspend(runId, token, {
      requestId: 'clr_new',
      question: 'Q?',
      choices: [],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    }),
  'sleep again (woken early)': (runId, token) => store.setStatus(runId, token, 'waiting_for_input'),
  // Seeded with two calls waiting (see `seed`): one output leaves the other waiting.
  'resolve a request': post,
  // Seeded with one call waiting (see `seed`): from a run awake, as 'resolve a request' does.
  'wake on the last request': post,
  // Seeded past the deadline (see `seed`).
  'expire a waitpoint': (runId, token) =>
    store.expireWaitpoint(runId, TOOL_REQUEST, [TOOL_REQUEST, 'tcr_other'], token),
  'wait for children': (runId, token) =>
    store.delegate(runId, token, {
      call: 'call_new',
      deadlineMs: Date.now() + 60_000,
      maxChildren: 50,
      children: [{ id: `${runId}_child`, index: 0, goal: 'g' }],
    }),
  'wait for children again (woken early)': (runId, token) =>
    store.setStatus(runId, token, 'waiting_for_children'),
  // Seeded as a parent waiting on delegation `call_life` (see `seed`).
  'report a child': (runId) =>
    store.reportChild(
      runId,
      { id: `${runId}_child`, call: 'call_life', index: 0, durationMs: 5 },
      { status: 'completed', summary: 'done', usage },
    ),
  retry: (runId, token) => store.markRetrying(runId, token, 2, 100, { code: 'ERR_X', message: 'x' }),
  'release (shutdown)': (runId, token) => store.setStatus(runId, token, 'queued'),
  // Seeded with no runAt: its time has come.
  'start on time': (runId) => store.due(runId),
  reschedule: (runId) => store.reschedule(runId, Date.now() + 60_000),
  'request a cancel': (runId) => store.requestCancel(runId),
  'request an interrupt': (runId) => store.requestCancel(runId, 'interrupt'),
  'take a message': (runId) => store.steer(runId, { messageId: 'msg_life', content: 'x' }),
  complete: (runId, token) => store.finalize(runId, { status: 'completed', output: 'ok' }, token),
  fail: (runId, token) =>
    store.finalize(runId, { status: 'failed', error: { code: 'ERR_X', message: 'x' } }, token),
  cancel: (runId) => store.finalize(runId, { status: 'cancelled' }),
  // Seeded past its deadline, never started (see `seed`).
  expire: (runId) => store.finalize(runId, { status: 'expired', expiresAtMs: Date.now() - 1_000 }),
};

let next = 0;
/**
 * A run in `status`, owned by OWNER, waiting on a waitpoint: a parent's children for the report of
 * a child, else client tool calls (one, or two; past their deadline for the expiry step).
 */
async function seed(status: RunStatus, t: Transition): Promise<string> {
  const runId = t.step === 'wait for the session' ? newSessionRunId(newId('ses')) : `run_life${next++}`;
  await store.create({ id: runId, tenant: 't', spec: { input: 'x' }, createdAtMs: Date.now() });
  const run = keys.run(runId);
  await redis.hset(run.record, { status, owner: OWNER });
  if (t.step === 'expire') await redis.hset(run.record, 'expiresAt', Date.now() - 1_000);
  if (t.step === 'wait for the session') {
    await redis.hset(run.record, 'session', 'ses_ahead');
    await redis.rpush(run.session.queue, 'run_ahead', runId);
  }
  if (t.step === 'report a child') {
    const child = `${runId}_child`;
    await redis.hset(run.waitpoint, {
      id: 'call_life',
      kind: 'child',
      deadline: Date.now() + 60_000,
      pending: 1,
      [`e:${child}`]: '1-0',
      [`s:${child}`]: 'pending',
    });
    return runId;
  }
  const deadline = t.step === 'expire a waitpoint' ? Date.now() - 1_000 : Date.now() + 60_000;
  const waiting = t.step === 'wake on the last request' ? [TOOL_REQUEST] : [TOOL_REQUEST, 'tcr_other'];
  await redis.hset(run.waitpoint, {
    id: TOOL_REQUEST,
    kind: 'tool_output',
    deadline,
    pending: waiting.length,
    ...Object.fromEntries(
      waiting.flatMap((id, i) => [
        [`e:${id}`, `${i + 1}-0`],
        [`s:${id}`, 'pending'],
      ]),
    ),
  });
  return runId;
}

async function snapshot(runId: string) {
  const run = keys.run(runId);
  return {
    record: await redis.hgetall(run.record),
    events: await redis.xlen(run.events),
    waitpoint: await redis.hgetall(run.waitpoint),
    results: await redis.hgetall(run.waitpointResults),
  };
}

async function take(t: Transition, runId: string, token: string): Promise<void> {
  const step = STEPS[t.step];
  if (!step) throw new Error(`no driver for the step "${t.step}"`);
  // A refusal may be a reply or an error (a fenced worker's save throws): either way nothing may change.
  await step(runId, token).catch(() => undefined);
}

const steps = TRANSITIONS.filter((t) => t.from !== 'new');

describe.each(steps)('$step ($script)', (t) => {
  it.each(RUN_STATUSES.map((status) => [status]))('from %s', async (status) => {
    const runId = await seed(status, t);
    const before = await snapshot(runId);
    if (t.guard !== 'any') {
      await take(t, runId, STRANGER);
      expect(await snapshot(runId), 'a stranger changes nothing').toEqual(before);
    }
    await take(t, runId, OWNER);
    const after = await snapshot(runId);
    const startsFrom = (s: Transition) => s.from !== 'new' && s.from.includes(status);
    const allowed = startsFrom(t);
    if (isTerminal(status)) expect(allowed).toBe(false);
    if (!allowed) {
      // Another step of the same script and driver that starts from here is checked in its own row.
      if (steps.some((s) => s !== t && STEPS[s.step] === STEPS[t.step] && startsFrom(s))) return;
      expect(after, 'a step asked from a status it does not start from changes nothing').toEqual(before);
      return;
    }
    expect(after.record.status).toBe(t.to === 'unchanged' ? status : t.to);
    if (t.event) {
      const events = typeof t.event === 'string' ? [t.event] : t.event;
      expect(events).toContain((await store.readEvents(runId)).at(-1)?.type);
    } else if (t.step !== 'claim') expect(after.events).toBe(before.events);
  });
});

describe('submit (createRun)', () => {
  it('creates a queued run with run.queued, once', async () => {
    const run = { id: 'run_lifenew', tenant: 't', spec: { input: 'x' }, createdAtMs: Date.now() };
    expect(await store.create(run)).toBe(true);
    expect((await store.get(run.id))?.status).toBe('queued');
    expect((await store.readEvents(run.id)).map((e) => e.type)).toEqual(['run.queued']);
    expect(await store.create(run)).toBe(false);
  });

  it('creates a scheduled run with run.scheduled and its runAt', async () => {
    const runAtMs = Date.now() + 60_000;
    const run = { id: 'run_lifelater', tenant: 't', spec: { input: 'x' }, createdAtMs: Date.now(), runAtMs };
    expect(await store.create(run)).toBe(true);
    const record = await store.get(run.id);
    expect(record?.status).toBe('scheduled');
    expect(record?.runAt).toBe(new Date(runAtMs).toISOString());
    const events = await store.readEvents(run.id);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['run.scheduled', { runAt: new Date(runAtMs).toISOString() }],
    ]);
  });
});
