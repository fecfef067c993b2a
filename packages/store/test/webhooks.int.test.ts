import { setTimeout as delay } from 'node:timers/promises';
import { newId, type PendingApproval, type PendingClarify } from '@tether/protocol';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection, keySlot } from '../src/redis/index.js';
import { RunStore } from '../src/runs/index.js';
import { answerTokenHash, WebhookDispatcher, WebhookStore } from '../src/webhooks/index.js';

/**
 * A tenant's webhooks against the real scripts (on a Redis Cluster too: the
 * tenant's webhook keys share one hash slot, a run's its own): deliveries
 * recorded once per event and endpoint however often a run is dispatched, a
 * run's chain to an endpoint (one due at a time, in event order), the pump's
 * take, settle and sleep, disabling, redelivery, the log's pages, the dirty
 * runs a sweep dispatches, the answer token's hash kept with its question, and
 * an approval request sent to its policy's approver endpoint.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'webhooks', onError: () => {} });
const keys = createKeys(uniquePrefix('webhooks'));
const store = new RunStore({ redis, keys });
const webhooks = new WebhookStore({
  redis,
  keys,
  settings: { maxEndpoints: 3, disableAfterMs: 60_000, logMax: 5 },
});
/** Sealing is a visible wrapper here: the real box is `@tether/config`'s. */
const secrets = { seal: (text: string) => `sealed:${text}`, open: (text: string) => text.slice(7) };
const dispatcher = new WebhookDispatcher({
  store,
  webhooks,
  secrets,
  publicUrl: 'https://tether.example/',
  cacheMs: 1,
});
afterAll(async () => {
  await webhooks.close();
  await redis.quit();
});

let tenants = 0;
const tenant = () => `t${++tenants}-${Date.now().toString(36)}`;

async function endpoint(t: string, events: string[] = ['*']) {
  const created = await webhooks.create(t, { url: 'https://hooks.example/in', events, secret: 'sealed:s' });
  if (created === 'limit') throw new Error('limit');
  return created;
}

async function run(t: string, metadata?: Record<string, unknown>): Promise<string> {
  const id = newId('run');
  const spec = {
    input: 'x',
    model: { provider: 'replay' as const, script: [] },
    ...(metadata ? { metadata } : {}),
  };
  await store.create({ id, tenant: t, spec, createdAtMs: Date.now(), queue: keys.queuePrefix });
  return id;
}

const take = (t: string, endpointId: string, recover = false) =>
  webhooks.take(t, endpointId, 10, 60_000, recover);

/** A write_file call held for a decision, naming `approver` when given. */
const heldCall = (approver?: string): PendingApproval => ({
  requestId: newId('apr'),
  callId: 'call_0_0',
  tool: 'write_file',
  arguments: { path: 'a.txt', content: 'x' },
  reason: 'tools: write_file',
  expiresAt: new Date(Date.now() + 60_000).toISOString(),
  onTimeout: 'reject',
  ...(approver ? { approver } : {}),
});

/** A run of `t` that waits on one approval request, naming `approver` when given. */
async function awaitingApproval(t: string, approver?: string) {
  const runId = await run(t);
  const owner = 'w:1';
  await store.claim(runId, owner, 1, 'w');
  const pending = heldCall(approver);
  await store.requestApprovals(runId, owner, [pending]);
  return { runId, pending };
}

/** The types of the deliveries an endpoint's pump would take now. */
const takenTypes = async (t: string, endpointId: string) =>
  ((await take(t, endpointId))?.deliveries ?? []).map((d) => d.type);

describe('webhook store', () => {
  it('keeps a tenant’s webhook keys in one hash slot, apart from another tenant’s', () => {
    const w = keys.webhooks('acme');
    const slots = [
      w.endpoints,
      w.endpoint('e'),
      w.due('e'),
      w.log('e'),
      w.delivery('d'),
      w.chain('r', 'e'),
      w.cursor('r'),
      w.dirty,
    ];
    expect(new Set(slots.map(keySlot)).size).toBe(1);
    expect(keys.webhooks('beta').endpoints).not.toBe(w.endpoints);
  });

  it('lists endpoints in the order they were created, two of one millisecond included', async () => {
    const t = tenant();
    const a = await endpoint(t);
    // As if the next one came in the same millisecond as `a`, or the clock went back: `a` scores later.
    await redis.zadd(keys.webhooks(t).endpoints, Date.now() + 60_000, a.id);
    const b = await endpoint(t);
    const c = await endpoint(t);
    expect((await webhooks.list(t)).map((e) => e.id)).toEqual([a.id, b.id, c.id]);
  });

  it('creates endpoints up to the limit, lists them oldest first, updates and deletes them', async () => {
    const t = tenant();
    const a = await endpoint(t, ['run.completed']);
    const b = await endpoint(t, ['*']);
    await endpoint(t);
    expect(await webhooks.create(t, { url: 'https://x.example', events: ['*'], secret: 's' })).toBe('limit');
    expect((await webhooks.list(t)).map((e) => e.id)).toEqual([a.id, b.id, expect.any(String)]);
    expect(
      await webhooks.update(t, a.id, { events: ['run.failed', 'run.cancelled'], description: 'ops' }),
    ).toBe(true);
    expect(await webhooks.get(t, a.id)).toMatchObject({
      events: ['run.failed', 'run.cancelled'],
      description: 'ops',
    });
    expect(await webhooks.update(t, a.id, { description: '' })).toBe(true);
    expect((await webhooks.get(t, a.id))?.description).toBeUndefined();
    expect(await webhooks.update(t, 'whk_nope', { enabled: true })).toBe(false);
    expect(await redis.exists(keys.webhooks(t).endpoint('whk_nope'))).toBe(0);
    expect(await webhooks.delete(t, b.id)).toBe(true);
    expect(await webhooks.delete(t, b.id)).toBe(false);
    expect(await webhooks.get(t, b.id)).toBeUndefined();
    expect(await webhooks.get(tenant(), a.id)).toBeUndefined();
  });
});

describe('dispatch', () => {
  it('records one delivery per event and subscribed endpoint, once however often the run is dispatched', async () => {
    const t = tenant();
    const all = await endpoint(t, ['*']);
    const failures = await endpoint(t, ['run.failed']);
    const runId = await run(t, { ticket: 42 });
    await store.append(runId, { type: 'todo.updated', data: { todos: [] } });
    await store.finalize(runId, { status: 'completed', output: 'done' });
    expect(await dispatcher.dispatch(runId, t)).toBe(1);
    expect(await dispatcher.dispatch(runId, t)).toBe(0);
    expect(await dispatcher.dispatch(runId)).toBe(0);
    const got = await take(t, all.id);
    expect(got?.deliveries).toHaveLength(1);
    const [delivery] = got?.deliveries ?? [];
    const payload = JSON.parse(delivery?.payload ?? '{}');
    expect(payload).toEqual({
      id: delivery?.messageId,
      type: 'run.completed',
      at: expect.any(String),
      runId,
      data: { output: 'done' },
      run: { status: 'completed', metadata: { ticket: 42 } },
    });
    expect((await take(t, failures.id))?.deliveries).toEqual([]);
  });

  it('sends an endpoint nothing of before its creation, and a disabled one nothing', async () => {
    const t = tenant();
    const runId = await run(t);
    await store.append(runId, { type: 'clarify.timed_out', data: { requestId: 'clr_x' } });
    // Later than the event, to the millisecond.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const late = await endpoint(t, ['*']);
    const off = await endpoint(t, ['*']);
    await webhooks.update(t, off.id, { enabled: false });
    await store.finalize(runId, { status: 'cancelled', reason: 'by request' });
    expect(await dispatcher.dispatch(runId, t)).toBe(1);
    const got = await take(t, late.id);
    expect(got?.deliveries.map((d) => d.type)).toEqual(['run.cancelled']);
  });

  it('keeps a run’s deliveries to an endpoint in a chain: one due at a time, the next when it ends', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['*']);
    const runId = await run(t);
    for (const requestId of ['clr_1', 'clr_2', 'clr_3']) {
      await store.append(runId, { type: 'clarify.timed_out', data: { requestId } });
    }
    expect(await dispatcher.dispatch(runId, t)).toBe(3);
    const first = await take(t, ep.id);
    expect(first?.deliveries.map((d) => JSON.parse(d.payload).data.requestId)).toEqual(['clr_1']);
    const [one] = first?.deliveries ?? [];
    if (!one) throw new Error('no delivery');
    // A failed attempt keeps the chain waiting on it.
    const retry = Date.now() + 60_000;
    await webhooks.settle(t, ep.id, one, {
      outcome: 'retrying',
      httpStatus: 500,
      error: 'HTTP 500',
      nextAtMs: retry,
    });
    expect((await take(t, ep.id))?.deliveries).toEqual([]);
    expect(await webhooks.sleep(t, ep.id)).toEqual({ busy: false, untilMs: retry });
    await redis.zadd(keys.webhooks(t).due(ep.id), 0, one.id);
    const again = await take(t, ep.id);
    expect(again?.deliveries.map((d) => [d.id, d.attempts])).toEqual([[one.id, 1]]);
    await webhooks.settle(t, ep.id, one, { outcome: 'delivered', httpStatus: 204 });
    const second = await take(t, ep.id);
    expect(second?.deliveries.map((d) => JSON.parse(d.payload).data.requestId)).toEqual(['clr_2']);
    const record = await webhooks.delivery(t, ep.id, one.id);
    expect(record).toMatchObject({ status: 'delivered', attempts: 2, lastStatus: 204 });
    expect(record?.lastError).toBeUndefined();
  });

  it('gives the runs of one endpoint chains of their own: a failing run holds back only its own', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['run.completed']);
    const [a, b] = [await run(t), await run(t)];
    for (const id of [a, b]) {
      await store.finalize(id, { status: 'completed', output: id });
      await dispatcher.dispatch(id, t);
    }
    expect((await take(t, ep.id))?.deliveries.map((d) => d.runId).sort()).toEqual([a, b].sort());
  });

  it('records an answer token’s hash with the question, and sends the token sealed, the url and deadline in the payload', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['clarify.requested']);
    const runId = await run(t);
    const owner = 'w:1';
    await store.claim(runId, owner, 1, 'w');
    const pending: PendingClarify = {
      requestId: newId('clr'),
      question: 'Which one?',
      choices: ['a', 'b'],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    };
    await store.suspend(runId, owner, pending);
    expect(await dispatcher.dispatch(runId, t)).toBe(1);
    const [delivery] = (await take(t, ep.id))?.deliveries ?? [];
    const payload = JSON.parse(delivery?.payload ?? '{}');
    expect(payload.answer).toEqual({
      url: `https://tether.example/v1/runs/${runId}/clarify/${pending.requestId}`,
      expiresAt: pending.expiresAt,
    });
    expect(payload.run.status).toBe('waiting_for_input');
    const token = secrets.open(delivery?.token ?? '');
    expect(token).toMatch(/^wat_[A-Za-z0-9_-]{43}$/);
    const waitpoint = await redis.hgetall(keys.run(runId).waitpoint);
    // The first 96 bits of the token's hash: the waitpoint stays compact with it.
    expect(waitpoint[`t:${pending.requestId}:${answerTokenHash(token).slice(0, 24)}`]).toBe('ok');
    expect(Object.keys(waitpoint).filter((field) => field.startsWith('t:'))).toHaveLength(1);
    expect(await redis.object('ENCODING', keys.run(runId).waitpoint)).toBe('listpack');
    // The token answers that question once.
    await expect(store.answer(runId, pending.requestId, 'a', answerTokenHash(token))).resolves.toBe('ok');
    await expect(store.answer(runId, pending.requestId, 'b', answerTokenHash(token))).resolves.toBe(
      'token_used',
    );
  });
  it('dispatches a run whose tenant has no endpoint without reading its log, the tenant given or not', async () => {
    const t = tenant();
    const runId = await run(t);
    const owner = 'w:1';
    await store.claim(runId, owner, 1, 'w');
    const pending: PendingClarify = {
      requestId: newId('clr'),
      question: 'Which one?',
      choices: ['a', 'b'],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    };
    await store.suspend(runId, owner, pending);
    expect(await dispatcher.dispatch(runId)).toBe(0);
    expect(await dispatcher.dispatch(runId, t)).toBe(0);
    // No answer token was made for the question (the log's look records one with each it reads).
    const waitpoint = await redis.hgetall(keys.run(runId).waitpoint);
    expect(Object.keys(waitpoint).filter((field) => field.startsWith('t:'))).toEqual([]);
    expect(await dispatcher.dispatch(newId('run'))).toBe(0);
  });
});

describe('an approval policy’s approver', () => {
  it('gets the request whatever it subscribes to, with a token that decides it; an endpoint that neither subscribes nor approves gets nothing', async () => {
    const t = tenant();
    const approver = await endpoint(t, ['run.completed']);
    const bystander = await endpoint(t, ['run.failed']);
    const { runId, pending } = await awaitingApproval(t, approver.id);
    expect(await dispatcher.dispatch(runId, t)).toBe(1);
    expect(await dispatcher.dispatch(runId, t)).toBe(0);
    expect(await takenTypes(t, bystander.id)).toEqual([]);
    const got = await take(t, approver.id);
    expect(got?.deliveries.map((d) => d.type)).toEqual(['approval.requested']);
    const [delivery] = got?.deliveries ?? [];
    const payload = JSON.parse(delivery?.payload ?? '{}');
    expect(payload.data).toEqual(pending);
    expect(payload.answer).toEqual({
      url: `https://tether.example/v1/runs/${runId}/approvals/${pending.requestId}`,
      expiresAt: pending.expiresAt,
    });
    const token = secrets.open(delivery?.token ?? '');
    const decision = { decision: 'approve' as const, by: `approver:${approver.id}` };
    await expect(store.decide(runId, pending.requestId, decision, answerTokenHash(token))).resolves.toBe(
      'last',
    );
  });

  it('gets one delivery of a request when it subscribes to approval.requested too; a run without an approver goes to subscribers only', async () => {
    const t = tenant();
    const approver = await endpoint(t, ['approval.requested']);
    const other = await endpoint(t, ['run.completed']);
    const named = await awaitingApproval(t, approver.id);
    expect(await dispatcher.dispatch(named.runId, t)).toBe(1);
    expect(await takenTypes(t, approver.id)).toEqual(['approval.requested']);
    const unnamed = await awaitingApproval(t);
    expect(await dispatcher.dispatch(unnamed.runId, t)).toBe(1);
    expect((await take(t, approver.id))?.deliveries.map((d) => d.runId)).toEqual([unnamed.runId]);
    expect(await takenTypes(t, other.id)).toEqual([]);
  });

  it('gets nothing while disabled, nor does an endpoint of another tenant named as the approver', async () => {
    const t = tenant();
    const off = await endpoint(t, ['run.completed']);
    await webhooks.update(t, off.id, { enabled: false });
    const on = await endpoint(t, ['run.completed']);
    const t2 = tenant();
    const elsewhere = await endpoint(t2, ['*']);
    for (const approver of [off.id, elsewhere.id]) {
      const { runId } = await awaitingApproval(t, approver);
      expect(await dispatcher.dispatch(runId, t)).toBe(0);
    }
    // Enabled again, it gets nothing of the requests dispatched while it was disabled.
    await webhooks.update(t, off.id, { enabled: true });
    for (const endpointId of [off.id, on.id]) expect(await takenTypes(t, endpointId)).toEqual([]);
    expect(await takenTypes(t2, elsewhere.id)).toEqual([]);
  });
});

describe('a crew root’s copies of its children’s approval events', () => {
  it('are not delivered (the child’s own are, with the answer URL that decides them)', async () => {
    const t = tenant();
    const all = await endpoint(t, ['*']);
    const rootId = await run(t);
    const childRunId = `${newId('run')}_${rootId.slice(4)}`;
    const request = heldCall();
    const { requestId } = request;
    // As the store tells them on the root: the child's id first.
    await store.appendEvents(rootId, [
      { type: 'approval.requested', data: { childRunId, ...request } },
      { type: 'approval.resolved', data: { childRunId, requestId, decision: 'approve', by: t } },
      { type: 'run.completed', data: { output: 'done' } },
    ]);
    expect(await dispatcher.dispatch(rootId, t)).toBe(1);
    expect(await takenTypes(t, all.id)).toEqual(['run.completed']);
  });
});

describe('the pump’s steps', () => {
  it('recovers what a dead activation left in flight, and drops deliveries of a deleted endpoint', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['run.failed']);
    const runId = await run(t);
    await store.finalize(runId, { status: 'failed', error: { code: 'E', message: 'm' } });
    await dispatcher.dispatch(runId, t);
    const [taken] = (await take(t, ep.id))?.deliveries ?? [];
    // The activation died: the next one starts by taking its deliveries back.
    expect((await take(t, ep.id))?.deliveries).toEqual([]);
    expect((await take(t, ep.id, true))?.deliveries.map((d) => d.id)).toEqual([taken?.id]);
    await webhooks.delete(t, ep.id);
    expect(await take(t, ep.id)).toBeUndefined();
    expect(await webhooks.sleep(t, ep.id)).toBeUndefined();
    if (!taken) throw new Error('no delivery');
    expect(await webhooks.settle(t, ep.id, taken, { outcome: 'delivered' })).toEqual({
      status: 'dropped',
      disabled: false,
    });
  });

  it('disables an endpoint once it has failed without a success for disableAfterMs; its deliveries end disabled', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['*']);
    const runId = await run(t);
    await store.finalize(runId, { status: 'completed', output: 'x' });
    await dispatcher.dispatch(runId, t);
    const [d] = (await take(t, ep.id))?.deliveries ?? [];
    if (!d) throw new Error('no delivery');
    const end = { outcome: 'retrying' as const, error: 'connect ECONNREFUSED', nextAtMs: Date.now() };
    expect(await webhooks.settle(t, ep.id, d, end)).toEqual({ status: 'pending', disabled: false });
    expect((await webhooks.get(t, ep.id))?.failingSince).toBeGreaterThan(0);
    // Failing since long ago: the next failure disables it.
    await redis.hset(keys.webhooks(t).endpoint(ep.id), 'failingSince', Date.now() - 61_000);
    await take(t, ep.id);
    expect(await webhooks.settle(t, ep.id, d, end)).toEqual({ status: 'pending', disabled: true });
    const disabled = await webhooks.get(t, ep.id);
    expect(disabled).toMatchObject({ enabled: false, disabledReason: expect.stringMatching(/failed/) });
    const again = await take(t, ep.id);
    expect(again?.enabled).toBe(false);
    await webhooks.settle(t, ep.id, d, { outcome: 'disabled' });
    expect(await webhooks.delivery(t, ep.id, d.id)).toMatchObject({ status: 'disabled', attempts: 2 });
    expect(await webhooks.redeliver(t, ep.id, d.id)).toBe('disabled');
    // Enabled again, its failures are forgotten, and a redelivery goes.
    await webhooks.update(t, ep.id, { enabled: true });
    const enabled = await webhooks.get(t, ep.id);
    expect(enabled).toMatchObject({ enabled: true, disabledAt: undefined, failingSince: undefined });
    const copy = await webhooks.redeliver(t, ep.id, d.id);
    expect(copy).toMatchObject({
      status: 'pending',
      attempts: 0,
      redeliveryOf: d.id,
      messageId: d.messageId,
    });
    const [resent] = (await take(t, ep.id))?.deliveries ?? [];
    expect(resent?.payload).toBe(d.payload);
  });

  it('pages the log newest first, trims it to the newest logMax once it holds 64 more, and ends deliveries out of time as failed', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['run.completed']);
    const ids: string[] = [];
    const add = async (count: number) => {
      for (let i = 0; i < count; i++) {
        const runId = await run(t);
        ids.push(runId);
        await store.finalize(runId, { status: 'completed', output: String(i) });
        await dispatcher.dispatch(runId, t);
        // The log orders by Redis's time in ms: two deliveries of one ms come in no set order.
        await delay(2);
      }
    };
    await add(7);
    const first = await webhooks.deliveries(t, ep.id, { limit: 4 });
    const second = await webhooks.deliveries(t, ep.id, { limit: 4, cursor: first.nextCursor ?? undefined });
    const all = [...first.deliveries, ...second.deliveries];
    expect(second.nextCursor).toBeNull();
    expect(new Set(all.map((d) => d.runId))).toEqual(new Set(ids));
    await add(62);
    expect(await redis.zcard(keys.webhooks(t).log(ep.id))).toBe(69);
    await add(1);
    const trimmed = await webhooks.deliveries(t, ep.id, { limit: 100 });
    expect(trimmed.deliveries.map((d) => d.runId)).toEqual(ids.slice(-5).reverse());
    const [d] = (await take(t, ep.id))?.deliveries ?? [];
    if (!d) throw new Error('no delivery');
    await webhooks.settle(t, ep.id, d, { outcome: 'failed', httpStatus: 410, error: 'HTTP 410: gone' });
    expect(await webhooks.delivery(t, ep.id, d.id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastStatus: 410,
      lastError: 'HTTP 410: gone',
      finishedAt: expect.any(Number),
    });
    expect(await redis.ttl(keys.webhooks(t).delivery(d.id))).toBeLessThanOrEqual(
      webhooks.settings.retentionSeconds,
    );
  });
});

describe('dirty runs', () => {
  it('marks the runs of an API step, dispatches them after it, and the sweep dispatches those left marked', async () => {
    const t = tenant();
    const ep = await endpoint(t, ['run.cancelled']);
    const a = await run(t);
    const errors: unknown[] = [];
    await dispatcher.around(
      [a],
      () => store.finalize(a, { status: 'cancelled' }),
      t,
      (e) => errors.push(e),
    );
    expect(errors).toEqual([]);
    expect(await redis.zcard(keys.webhooks(t).dirty)).toBe(0);
    // A process that died after its step: the run stays marked.
    const b = await run(t);
    await redis.zadd(keys.webhooks(t).dirty, Date.now() - 5_000, b);
    await store.finalize(b, { status: 'cancelled' });
    expect(await dispatcher.sweep(60_000)).toBe(0);
    await redis.del(keys.webhookSweepLock);
    expect(await dispatcher.sweep(1_000)).toBeGreaterThanOrEqual(1);
    expect(await dispatcher.sweep(1_000)).toBe(-1);
    expect(await redis.zcard(keys.webhooks(t).dirty)).toBe(0);
    const runs = (await take(t, ep.id))?.deliveries.map((d) => d.runId).sort();
    expect(runs).toEqual([a, b].sort());
  });
});
