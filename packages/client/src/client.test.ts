/**
 * TetherClient against the fake API on a real port: submit (idempotency),
 * get, list, wait, tree, cancel, answer, decide and steer with their error mapping,
 * runs.runToCompletion deciding approval requests, files, tools, retries, and
 * an unreachable server.
 */
import { createServer } from 'node:net';
import type { ApprovalDecisionBody, RunEvent } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TetherClient } from './client.js';
import {
  TetherApiError,
  TetherConflictError,
  TetherConnectionError,
  TetherNotFoundError,
  TetherProtocolError,
  TetherRateLimitError,
  TetherUnauthorizedError,
} from './errors.js';
import type { ApprovalRequest } from './run-to-completion.js';
import { FakeApi, type FakeRun } from './testing/fake-api.js';
import type { RunTree } from './tree.js';

let api: FakeApi;
let client: TetherClient;

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  api.keys.set('key-b', 'tenant-b');
  await api.start();
  client = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: false });
});

afterEach(async () => {
  await api.close();
});

describe('the global fetch', () => {
  it('is called as a plain function, as browsers require (theirs throws "Illegal invocation" as a method)', async () => {
    const original = globalThis.fetch;
    globalThis.fetch = function (this: unknown, ...args: Parameters<typeof fetch>) {
      if (this !== undefined && this !== globalThis) throw new TypeError('Illegal invocation');
      return original(...args);
    } as typeof fetch;
    try {
      const plain = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: false });
      await expect(plain.list()).resolves.toMatchObject({ data: [] });
    } finally {
      globalThis.fetch = original;
    }
  });
});

/** A port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}

describe('submit', () => {
  it('posts the body with bearer auth and returns id, status, links and token', async () => {
    const result = await client.submit({ input: 'list files', locale: 'en', clarify: { timeoutMs: 60_000 } });
    expect(result).toEqual({
      id: 'run_0001',
      status: 'queued',
      links: { self: '/v1/runs/run_0001', events: '/v1/runs/run_0001/events' },
      token: 'tok_run_0001',
    });
    const [request] = api.requests;
    expect(request?.method).toBe('POST');
    expect(request?.headers.authorization).toBe('Bearer key-a');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toEqual({ input: 'list files', locale: 'en', clarify: { timeoutMs: 60_000 } });
  });

  it('sends Idempotency-Key: the same key and body return the same run, another body is 409', async () => {
    const first = await client.submit({ input: 'a' }, { idempotencyKey: 'k1' });
    const again = await client.submit({ input: 'a' }, { idempotencyKey: 'k1' });
    expect(again.id).toBe(first.id);
    expect(api.requests.map((r) => r.headers['idempotency-key'])).toEqual(['k1', 'k1']);
    expect(api.runs.size).toBe(1);
    const conflict = await client.submit({ input: 'b' }, { idempotencyKey: 'k1' }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(TetherConflictError);
    expect(conflict).toMatchObject({ status: 409, code: 'ERR_IDEMPOTENCY_CONFLICT', requestId: 'req-409' });
  });

  it('makes its own idempotency key when retries are on, so a retried submit is one run', async () => {
    const retrying = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: { limit: 1 } });
    api.rateLimitNext(1, '0');
    const result = await retrying.submit({ input: 'a' });
    expect(api.requests).toHaveLength(2);
    const keys = api.requests.map((r) => r.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(api.runs.size).toBe(1);
    expect(result.id).toBe('run_0001');
  });

  it('sends no idempotency key when retries are off and none is given', async () => {
    await client.submit({ input: 'a' });
    expect(api.requests[0]?.headers['idempotency-key']).toBeUndefined();
  });
});

describe('get, list and wait', () => {
  it("gets a run, and 404s another tenant's run as TetherNotFoundError", async () => {
    const mine = api.createRun({ input: 'x' }, 'tenant-a');
    const theirs = api.createRun({ input: 'y' }, 'tenant-b');
    const run = await client.get(mine.run.id);
    expect(run).toMatchObject({ id: mine.run.id, status: 'queued', attempts: 0, todos: [] });
    const error = await client.get(theirs.run.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TetherNotFoundError);
    expect(error).toBeInstanceOf(TetherApiError);
    expect(error).toMatchObject({
      status: 404,
      code: 'ERR_RUN_NOT_FOUND',
      message: `Run ${theirs.run.id} not found`,
    });
  });

  it('lists newest first and pages with the cursor', async () => {
    for (let i = 0; i < 5; i++) api.createRun({ input: `r${i}` }, 'tenant-a');
    api.createRun({ input: 'other' }, 'tenant-b');
    const first = await client.list({ limit: 2 });
    expect(first.data.map((r) => r.id)).toEqual(['run_0005', 'run_0004']);
    expect(first.nextCursor).toBe('run_0004');
    const second = await client.list({ limit: 2, cursor: first.nextCursor ?? undefined });
    expect(second.data.map((r) => r.id)).toEqual(['run_0003', 'run_0002']);
    const last = await client.list({ limit: 2, cursor: second.nextCursor ?? undefined });
    expect(last.data.map((r) => r.id)).toEqual(['run_0001']);
    expect(last.nextCursor).toBeNull();
    expect(api.requests.at(-1)?.query.get('cursor')).toBe('run_0002');
  });

  it('filters by status', async () => {
    const a = api.createRun({ input: 'a' }, 'tenant-a');
    api.createRun({ input: 'b' }, 'tenant-a');
    api.append(a.run.id, 'run.completed', { output: 'done' });
    const page = await client.list({ status: 'completed' });
    expect(page.data.map((r) => r.id)).toEqual([a.run.id]);
    expect(api.requests.at(-1)?.query.get('status')).toBe('completed');
  });

  it('waits until waiting_for_input with until: input, then until terminal', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    const id = fake.run.id;
    const isGet = (r: { method: string; path: string }) => r.method === 'GET' && r.path === `/v1/runs/${id}`;

    const waitingForInput = client.wait(id, { until: 'input', intervalMs: 5, maxIntervalMs: 20 });
    await api.waitFor(isGet, 2);
    api.append(id, 'run.started', { attempt: 1, workerId: 'w1' });
    await api.waitFor(isGet, 3);
    api.append(id, 'clarify.requested', {
      requestId: 'q1',
      question: 'Which?',
      choices: ['a', 'b'],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    const suspended = await waitingForInput;
    expect(suspended.status).toBe('waiting_for_input');
    expect(suspended.pendingClarify).toMatchObject({
      requestId: 'q1',
      question: 'Which?',
      choices: ['a', 'b'],
    });

    const seen = api.requests.filter(isGet).length;
    const finished = client.wait(id, { intervalMs: 5, maxIntervalMs: 20 });
    // Still waiting for input: `until: terminal` keeps polling.
    await api.waitFor(isGet, seen + 2);
    api.append(id, 'clarify.answered', { requestId: 'q1', answer: 'a' });
    api.append(id, 'run.completed', { output: 'chose a' });
    const done = await finished;
    expect(done).toMatchObject({ status: 'completed', output: 'chose a' });
  });

  it('keeps waiting while the run waits for its crew children, with until: input too', async () => {
    const parent = api.createRun({ input: 'x' }, 'tenant-a');
    const id = parent.run.id;
    api.append(id, 'run.started', { attempt: 1, workerId: 'w1' });
    const child = api.createChild(id, 0);
    api.append(id, 'child.started', { childRunId: child.run.id, index: 0, goal: 'Write the parser' });
    const isGet = (r: { method: string; path: string }) => r.method === 'GET' && r.path === `/v1/runs/${id}`;

    const waiting = client.wait(id, { until: 'input', intervalMs: 5, maxIntervalMs: 20 });
    await api.waitFor(isGet, 3);
    expect(parent.run.status).toBe('waiting_for_children');
    api.append(child.run.id, 'run.completed', { output: 'Parsed.' });
    api.append(id, 'child.finished', {
      childRunId: child.run.id,
      index: 0,
      status: 'completed',
      summary: 'Parsed.',
    });
    api.append(id, 'run.started', { attempt: 2, workerId: 'w2' });
    api.append(id, 'run.completed', { output: 'All done.' });
    const done = await waiting;
    expect(done).toMatchObject({
      status: 'completed',
      children: [{ id: child.run.id, index: 0, status: 'completed' }],
    });
  });

  it('stops waiting when the signal aborts', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    const controller = new AbortController();
    const waiting = client.wait(fake.run.id, { signal: controller.signal, intervalMs: 5 });
    await api.waitFor((r) => r.path === `/v1/runs/${fake.run.id}`, 2);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});

describe('tree', () => {
  /** root ─ [0] a ─ [0] a0, [1] a1; [1] b; [2] c (cancelled, removed once a is read) */
  function crew() {
    const root = api.createRun({ input: 'root' }, 'tenant-a');
    const a = api.createChild(root.run.id, 0);
    const b = api.createChild(root.run.id, 1);
    const c = api.createChild(root.run.id, 2);
    const a0 = api.createChild(a.run.id, 0);
    const a1 = api.createChild(a.run.id, 1);
    api.append(a0.run.id, 'run.completed', { output: 'a0 done' });
    api.append(a1.run.id, 'run.failed', { error: { code: 'ERR_X', message: 'broke' } });
    api.append(b.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    api.append(c.run.id, 'run.cancelled', {});
    // Retention removes c while the tree is read: after the root listed it, before c's own GET.
    const removeC = (request: { path: string }) => {
      if (request.path !== `/v1/runs/${a.run.id}`) return;
      api.off('request', removeC);
      api.removeRun(c.run.id);
    };
    api.on('request', removeC);
    return { root, a, b, c, a0, a1 };
  }

  const shape = (tree: RunTree): unknown => ({
    id: tree.id,
    index: tree.index,
    status: tree.status,
    read: tree.run !== undefined,
    ...(tree.unread ? { unread: tree.unread } : {}),
    children: tree.children.map(shape),
  });

  it('reads the run and its children depth first, keeping a child gone meanwhile as its parent listed it', async () => {
    const { root, a, b, c, a0, a1 } = crew();
    const tree = await client.tree(root.run.id);
    expect(shape(tree)).toEqual({
      id: root.run.id,
      index: undefined,
      status: 'queued',
      read: true,
      children: [
        {
          id: a.run.id,
          index: 0,
          status: 'queued',
          read: true,
          children: [
            { id: a0.run.id, index: 0, status: 'completed', read: true, children: [] },
            { id: a1.run.id, index: 1, status: 'failed', read: true, children: [] },
          ],
        },
        { id: b.run.id, index: 1, status: 'running', read: true, children: [] },
        { id: c.run.id, index: 2, status: 'cancelled', read: false, unread: 'not_found', children: [] },
      ],
    });
    expect(tree.children[0]?.run).toMatchObject({
      parentRunId: root.run.id,
      rootRunId: root.run.id,
      depth: 1,
    });
    expect(tree.children[0]?.children[0]?.run).toMatchObject({ output: 'a0 done', depth: 2 });
    // One GET per run, depth first, with the caller's key.
    const gets = api.requests.filter((r) => r.method === 'GET');
    expect(gets.map((r) => r.path.slice('/v1/runs/'.length))).toEqual([
      root.run.id,
      a.run.id,
      a0.run.id,
      a1.run.id,
      b.run.id,
      c.run.id,
    ]);
    expect(new Set(gets.map((r) => r.headers.authorization))).toEqual(new Set(['Bearer key-a']));
  });

  it('stops at maxDepth and maxRuns, marking the children it did not read', async () => {
    const { root, a, b, c } = crew();
    const rootOnly = await client.tree(root.run.id, { maxDepth: 0 });
    expect(rootOnly.children.map((t) => [t.id, t.unread])).toEqual([
      [a.run.id, 'max_depth'],
      [b.run.id, 'max_depth'],
      [c.run.id, 'max_depth'],
    ]);
    const shallow = await client.tree(root.run.id, { maxDepth: 1 });
    expect(shallow.children.map((t) => t.unread)).toEqual([undefined, undefined, 'not_found']);
    expect(shallow.children[0]?.children.map((t) => [t.unread, t.status, t.run])).toEqual([
      ['max_depth', 'completed', undefined],
      ['max_depth', 'failed', undefined],
    ]);

    // c is gone now: the root no longer lists it.
    const before = api.requests.length;
    const few = await client.tree(root.run.id, { maxRuns: 3 });
    expect(api.requests.length - before).toBe(3);
    expect(shape(few)).toMatchObject({
      children: [
        { id: a.run.id, read: true, children: [{ read: true }, { read: false, unread: 'max_runs' }] },
        { id: b.run.id, read: false, unread: 'max_runs' },
      ],
    });
    expect(few.children).toHaveLength(2);
    for (const bad of [{ maxDepth: -1 }, { maxDepth: 1.5 }, { maxRuns: 0 }]) {
      await expect(client.tree(root.run.id, bad)).rejects.toMatchObject({
        code: 'ERR_CLIENT_INVALID_OPTION',
      });
    }
  });

  it("throws the root's 404 (another tenant's tree too), and a cycle as a protocol error", async () => {
    const { root } = crew();
    const other = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-b', retry: false });
    await expect(other.tree(root.run.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.tree('run_9999')).rejects.toBeInstanceOf(TetherNotFoundError);

    const loop = api.createRun({ input: 'loop' }, 'tenant-a');
    const child = api.createChild(loop.run.id, 0);
    child.children.push({ id: loop.run.id, index: 0, status: 'running' });
    await expect(client.tree(loop.run.id)).rejects.toBeInstanceOf(TetherProtocolError);
  });
});

describe('cancel and answer', () => {
  it('cancels a running run (202) and refuses a finished one with TetherConflictError', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    expect(await client.cancel(fake.run.id)).toEqual({ id: fake.run.id, status: 'queued' });
    expect(fake.run.status).toBe('cancelled');
    expect(fake.events.at(-1)?.type).toBe('run.cancelled');
    const error = await client.cancel(fake.run.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TetherConflictError);
    expect(error).toMatchObject({ status: 409, code: 'ERR_RUN_FINISHED' });
  });

  it('answers a pending question; a second answer is 409, an unknown request or run 404', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    api.append(fake.run.id, 'clarify.requested', {
      requestId: 'q1',
      question: 'Which?',
      choices: [],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    await client.answer(fake.run.id, 'q1', 'the first');
    expect(api.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: `/v1/runs/${fake.run.id}/clarify/q1`,
      body: { answer: 'the first' },
    });
    expect(fake.events.at(-1)).toMatchObject({ type: 'clarify.answered', data: { answer: 'the first' } });

    const again = await client.answer(fake.run.id, 'q1', 'the second').catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TetherConflictError);
    expect(again).toMatchObject({ code: 'ERR_CLARIFY_NOT_PENDING' });
    const unknownRequest = await client.answer(fake.run.id, 'q9', 'x').catch((e: unknown) => e);
    expect(unknownRequest).toBeInstanceOf(TetherNotFoundError);
    expect(unknownRequest).toMatchObject({ code: 'ERR_CLARIFY_NOT_FOUND' });
    const unknownRun = await client.answer('run_9999', 'q1', 'x').catch((e: unknown) => e);
    expect(unknownRun).toBeInstanceOf(TetherNotFoundError);
    expect(unknownRun).toMatchObject({ code: 'ERR_RUN_NOT_FOUND' });
  });
});

describe('decide', () => {
  it('posts each kind of decision; the first wins, and later ones, unknown requests and bad edits are refused', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    api.requestApprovals(fake.run.id, [
      { tool: 'write_file', arguments: { path: 'a.txt', content: 'a' } },
      { tool: 'write_file', arguments: { path: 'b.txt', content: 'b' } },
      { tool: 'bash', arguments: { command: 'make' } },
    ]);
    expect(fake.run.pendingApprovals?.map((a) => a.requestId)).toEqual(['apr_0001', 'apr_0002', 'apr_0003']);
    api.checkEdit = (_tool, args) => (typeof args.path === 'string' ? undefined : '/path must be string');

    await client.decide(fake.run.id, 'apr_0001', { decision: 'approve' });
    const badEdit = await client
      .decide(fake.run.id, 'apr_0002', { decision: 'edit', arguments: { path: 7 } })
      .catch((e: unknown) => e);
    expect(badEdit).toBeInstanceOf(TetherApiError);
    expect(badEdit).toMatchObject({
      status: 400,
      code: 'ERR_APPROVAL_ARGUMENTS_INVALID',
      message: 'arguments: /path must be string',
    });
    await client.decide(fake.run.id, 'apr_0002', {
      decision: 'edit',
      arguments: { path: 'c.txt', content: 'c' },
    });
    await client.decide(fake.run.id, 'apr_0003', { decision: 'reject', message: 'not now' });
    expect(api.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: `/v1/runs/${fake.run.id}/approvals/apr_0003`,
      body: { decision: 'reject', message: 'not now' },
    });
    expect(fake.events.filter((e) => e.type === 'approval.resolved').map((e) => e.data)).toEqual([
      { requestId: 'apr_0001', decision: 'approve', by: 'tenant-a' },
      { requestId: 'apr_0002', decision: 'edit', by: 'tenant-a', arguments: { path: 'c.txt', content: 'c' } },
      { requestId: 'apr_0003', decision: 'reject', by: 'tenant-a', message: 'not now' },
    ]);
    expect(fake.run.pendingApprovals).toBeUndefined();

    const again = await client
      .decide(fake.run.id, 'apr_0001', { decision: 'reject' })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TetherConflictError);
    expect(again).toMatchObject({ code: 'ERR_APPROVAL_ALREADY_DECIDED' });
    const unknown = await client
      .decide(fake.run.id, 'apr_9999', { decision: 'approve' })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(TetherNotFoundError);
    expect(unknown).toMatchObject({ code: 'ERR_APPROVAL_UNKNOWN' });
    const otherTenant = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-b', retry: false });
    const hidden = await otherTenant
      .decide(fake.run.id, 'apr_0001', { decision: 'approve' })
      .catch((e: unknown) => e);
    expect(hidden).toMatchObject({ status: 404, code: 'ERR_RUN_NOT_FOUND' });
  });
});

describe('steer', () => {
  /** The events about messages sent to the run, as `[type, messageId, content?]`. */
  function messageEvents(fake: FakeRun): unknown[][] {
    return fake.events.flatMap((e) =>
      e.type === 'message.received'
        ? [[e.type, e.data.messageId, e.data.content]]
        : e.type === 'message.delivered' || e.type === 'message.undelivered'
          ? [[e.type, e.data.messageId]]
          : [],
    );
  }

  it('posts the message to a live run and answers its id; the run says when it takes it', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    api.append(fake.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    const first = await client.steer(fake.run.id, 'Keep the answer short.');
    const second = await client.steer(fake.run.id, 'And in French.\nMerci.');
    expect(first).toEqual({ messageId: 'msg_0001' });
    expect(second).toEqual({ messageId: 'msg_0002' });
    expect(api.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: `/v1/runs/${fake.run.id}/messages`,
      body: { content: 'And in French.\nMerci.' },
    });
    expect(api.requests.at(-1)?.headers.authorization).toBe('Bearer key-a');
    expect(api.deliverMessages(fake.run.id)).toEqual(['msg_0001', 'msg_0002']);
    expect(messageEvents(fake)).toEqual([
      ['message.received', 'msg_0001', 'Keep the answer short.'],
      ['message.received', 'msg_0002', 'And in French.\nMerci.'],
      ['message.delivered', 'msg_0001'],
      ['message.delivered', 'msg_0002'],
    ]);
    // A waiting run takes messages too (when it next wakes).
    api.append(fake.run.id, 'clarify.requested', {
      requestId: 'clr_1',
      question: 'Which colour?',
      choices: ['red', 'blue'],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    await expect(client.steer(fake.run.id, 'Blue, please.')).resolves.toEqual({ messageId: 'msg_0003' });
  });

  it('refuses an ended run with TetherConflictError, and a message it did not take is said undelivered', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    await client.steer(fake.run.id, 'Stop after the tests.');
    await client.cancel(fake.run.id);
    expect(messageEvents(fake)).toEqual([
      ['message.received', 'msg_0001', 'Stop after the tests.'],
      ['message.undelivered', 'msg_0001'],
    ]);
    expect(fake.events.at(-1)?.type).toBe('run.cancelled');
    const ended = await client.steer(fake.run.id, 'Too late?').catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(TetherConflictError);
    expect(ended).toMatchObject({
      status: 409,
      code: 'ERR_RUN_ENDED',
      message: `Run ${fake.run.id} has ended; it takes no more messages.`,
    });
  });

  it('refuses a 21st message the run has not taken, and takes more once it has', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    for (let i = 1; i <= 20; i++) await client.steer(fake.run.id, `message ${i}`);
    const full = await client.steer(fake.run.id, 'message 21').catch((e: unknown) => e);
    expect(full).toBeInstanceOf(TetherConflictError);
    expect(full).toMatchObject({ status: 409, code: 'ERR_RUN_MESSAGES_LIMIT' });
    expect(fake.events.filter((e) => e.type === 'message.received')).toHaveLength(20);
    api.deliverMessages(fake.run.id);
    await expect(client.steer(fake.run.id, 'message 21')).resolves.toEqual({ messageId: 'msg_0021' });
  });

  it("404s an unknown run and another tenant's, and refuses empty or non-string content before sending", async () => {
    const theirs = api.createRun({ input: 'y' }, 'tenant-b');
    for (const id of ['run_9999', theirs.run.id]) {
      const error = await client.steer(id, 'hello').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TetherNotFoundError);
      expect(error).toMatchObject({ status: 404, code: 'ERR_RUN_NOT_FOUND' });
    }
    expect(theirs.events.map((e) => e.type)).toEqual(['run.queued']);
    const before = api.requests.length;
    for (const content of ['', undefined, 42]) {
      const error = await client.steer(theirs.run.id, content as string).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'ERR_CLIENT_INVALID_OPTION',
        message: 'content must be a non-empty string',
      });
    }
    expect(api.requests.length).toBe(before);
  });
});

/** The run's first turn holds these calls; once each has its decision, the run completes with what was decided. */
function holdOnSubmit(calls: Array<{ tool: string; arguments: unknown }>): void {
  api.onSubmit = (run) => {
    api.append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    api.requestApprovals(run.run.id, calls);
  };
  api.onDecision = (run) => completeOnceDecided(run);
}

function completeOnceDecided(run: FakeRun): void {
  if ((run.run.pendingApprovals ?? []).length > 0) return;
  const decided = run.events.filter((e) => e.type === 'approval.resolved').map((e) => e.data.decision);
  api.append(run.run.id, 'run.completed', { output: decided.join(',') });
}

function resolvedOf(runId: string): Array<RunEvent<'approval.resolved'>['data']> {
  return (api.runs.get(runId)?.events ?? []).flatMap((e) => (e.type === 'approval.resolved' ? [e.data] : []));
}

describe('runs.runToCompletion: approval requests', () => {
  it('asks onApprovalRequest for each held call and posts what it returns: approve, edit, reject', async () => {
    holdOnSubmit([
      { tool: 'bash', arguments: { command: 'ls' } },
      { tool: 'write_file', arguments: { path: 'a.txt', content: 'a' } },
      { tool: 'bash', arguments: { command: 'rm -rf /' } },
    ]);
    const asked: ApprovalRequest[] = [];
    const run = await client.runs.runToCompletion(
      { input: 'guarded', approval: { tools: ['write_file'], bash: { ask: ['.*'] } } },
      {
        onApprovalRequest: async (request) => {
          asked.push(request);
          if (request.tool === 'write_file') {
            return { decision: 'edit', arguments: { ...(request.arguments as object), path: 'b.txt' } };
          }
          const { command } = request.arguments as { command: string };
          return command.startsWith('rm')
            ? { decision: 'reject', message: 'no deleting' }
            : { decision: 'approve' };
        },
      },
    );
    expect(run).toMatchObject({ status: 'completed', output: 'approve,edit,reject' });
    expect(asked.map(({ runId, requestId, tool, reason }) => ({ runId, requestId, tool, reason }))).toEqual([
      { runId: run.id, requestId: 'apr_0001', tool: 'bash', reason: 'tools: bash' },
      { runId: run.id, requestId: 'apr_0002', tool: 'write_file', reason: 'tools: write_file' },
      { runId: run.id, requestId: 'apr_0003', tool: 'bash', reason: 'tools: bash' },
    ]);
    expect(resolvedOf(run.id)).toEqual([
      { requestId: 'apr_0001', decision: 'approve', by: 'tenant-a' },
      { requestId: 'apr_0002', decision: 'edit', by: 'tenant-a', arguments: { path: 'b.txt', content: 'a' } },
      { requestId: 'apr_0003', decision: 'reject', by: 'tenant-a', message: 'no deleting' },
    ]);
    expect(api.requests[0]?.body).toMatchObject({
      approval: { tools: ['write_file'], bash: { ask: ['.*'] } },
    });
  });

  it("decides a crew child's call, told on the root it follows, on the child", async () => {
    const asked: ApprovalRequest[] = [];
    api.onSubmit = (root) => {
      api.append(root.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
      const child = api.createChild(root.run.id, 0);
      api.requestApprovals(child.run.id, [
        { tool: 'write_file', arguments: { path: 'a.txt', content: 'a' } },
      ]);
    };
    api.onDecision = (child) => {
      api.append(child.run.id, 'run.completed', { output: 'child done' });
      if (child.run.rootRunId) api.append(child.run.rootRunId, 'run.completed', { output: 'root done' });
    };
    const run = await client.runs.runToCompletion(
      { input: 'lead the crew' },
      {
        onApprovalRequest: (request) => {
          asked.push(request);
          return { decision: 'approve' };
        },
      },
    );
    expect(run).toMatchObject({ status: 'completed', output: 'root done' });
    const [request] = asked;
    expect(request?.runId).not.toBe(run.id);
    expect(request).toMatchObject({ requestId: 'apr_0001', tool: 'write_file' });
    expect(request).not.toHaveProperty('childRunId');
    expect(resolvedOf(request?.runId ?? '')).toEqual([
      { requestId: 'apr_0001', decision: 'approve', by: 'tenant-a' },
    ]);
    expect(api.requests.filter((r) => r.path.includes('/approvals/')).map((r) => r.path)).toEqual([
      `/v1/runs/${request?.runId}/approvals/apr_0001`,
    ]);
  });

  it("rejects a call whose handler throws, telling the model the error's message", async () => {
    holdOnSubmit([{ tool: 'bash', arguments: { command: 'deploy' } }]);
    const run = await client.runs.runToCompletion(
      { input: 'x' },
      {
        onApprovalRequest: () => {
          throw new Error('the approver service is down');
        },
      },
    );
    expect(run.output).toBe('reject');
    expect(resolvedOf(run.id)).toEqual([
      { requestId: 'apr_0001', decision: 'reject', by: 'tenant-a', message: 'the approver service is down' },
    ]);
  });

  it('posts nothing without a handler: the run waits for a decision from elsewhere', async () => {
    holdOnSubmit([{ tool: 'bash', arguments: { command: 'make' } }]);
    const elsewhere = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: false });
    const running = client.runs.runToCompletion({ input: 'x' });
    // The run's stream replays its request to runToCompletion whenever it connects.
    await api.waitFor((r) => r.method === 'POST' && r.path === '/v1/runs');
    await elsewhere.decide('run_0001', 'apr_0001', { decision: 'approve' });
    const run = await running;
    expect(run.output).toBe('approve');
    // The one decision is the other client's.
    expect(api.requests.filter((r) => r.path.includes('/approvals/'))).toHaveLength(1);
  });

  it("aborts a handler's signal when its call is decided elsewhere, and leaves its late decision's 409", async () => {
    holdOnSubmit([{ tool: 'bash', arguments: { command: 'make' } }]);
    const elsewhere = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: false });
    let aborted = false;
    const run = await client.runs.runToCompletion(
      { input: 'x' },
      {
        onApprovalRequest: async ({ runId, requestId, signal }) => {
          await elsewhere.decide(runId, requestId, { decision: 'reject', message: 'decided in the console' });
          await new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          aborted = signal.aborted;
          return { decision: 'approve' } satisfies ApprovalDecisionBody;
        },
      },
    );
    expect(aborted).toBe(true);
    expect(run.output).toBe('reject');
    const posts = api.requests.filter((r) => r.path.includes('/approvals/'));
    expect(posts.map((r) => r.body)).toEqual([
      { decision: 'reject', message: 'decided in the console' },
      { decision: 'approve' },
    ]);
    expect(resolvedOf(run.id)).toHaveLength(1);
  });

  it('stops and rejects with the API error when a decision is refused as invalid (a 400)', async () => {
    holdOnSubmit([{ tool: 'write_file', arguments: { path: 'a.txt', content: 'a' } }]);
    api.checkEdit = () => '/content must be string';
    const error = await client.runs
      .runToCompletion(
        { input: 'x' },
        { onApprovalRequest: () => ({ decision: 'edit', arguments: { path: 'a.txt', content: 1 } }) },
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TetherApiError);
    expect(error).toMatchObject({ status: 400, code: 'ERR_APPROVAL_ARGUMENTS_INVALID' });
    // The run still waits for a decision.
    expect(api.runs.get('run_0001')?.run.pendingApprovals).toHaveLength(1);
  });

  it('refuses an onApprovalRequest that is not a function before sending anything', async () => {
    const error = await client.runs
      .runToCompletion({ input: 'x' }, { onApprovalRequest: 'approve' as never })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_CLIENT_INVALID_OPTION' });
    expect(api.requests).toHaveLength(0);
  });
});

describe('errors', () => {
  it('maps 401 (no key, wrong key) to TetherUnauthorizedError', async () => {
    for (const apiKey of [undefined, 'wrong']) {
      const anonymous = new TetherClient({
        baseUrl: api.baseUrl,
        retry: false,
        ...(apiKey ? { apiKey } : {}),
      });
      const error = await anonymous.list().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TetherUnauthorizedError);
      expect(error).toMatchObject({ status: 401, code: 'ERR_UNAUTHORIZED' });
    }
    expect(api.requests[0]?.headers.authorization).toBeUndefined();
    expect(api.requests[1]?.headers.authorization).toBe('Bearer wrong');
  });

  it('maps 429 to TetherRateLimitError with retryAfterMs', async () => {
    api.rateLimitNext(1, '7');
    const error = await client.answer('run_0001', 'q1', 'x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TetherRateLimitError);
    expect(error).toMatchObject({
      status: 429,
      code: 'ERR_RATE_LIMITED',
      retryAfterMs: 7_000,
      retryable: true,
    });
  });

  it('retries a 429 after Retry-After and succeeds', async () => {
    const retrying = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: 2 });
    api.rateLimitNext(2, '0');
    const page = await retrying.list();
    expect(page.data).toEqual([]);
    expect(api.requests).toHaveLength(3);
  });

  it('gives up on a 429 whose Retry-After exceeds maxRetryAfterMs', async () => {
    const retrying = new TetherClient({
      baseUrl: api.baseUrl,
      apiKey: 'key-a',
      retry: { limit: 3, maxRetryAfterMs: 1_000 },
    });
    api.rateLimitNext(1, '120');
    await expect(retrying.list()).rejects.toBeInstanceOf(TetherRateLimitError);
    expect(api.requests).toHaveLength(1);
  });

  it('throws TetherConnectionError naming the URL and TETHER_URL when nothing listens', async () => {
    const port = await closedPort();
    const offline = new TetherClient({ baseUrl: `http://127.0.0.1:${port}`, retry: false });
    const error = await offline.get('run_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TetherConnectionError);
    expect(error).toMatchObject({ code: 'ERR_CLIENT_CONNECTION', retryable: true });
    expect((error as Error).message).toContain(`http://127.0.0.1:${port}`);
    expect((error as Error).message).toContain('ECONNREFUSED');
    expect((error as Error).message).toContain('TETHER_URL');
  });

  it('retries a GET on a refused connection before giving up', async () => {
    const port = await closedPort();
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const offline = new TetherClient({
      baseUrl: `http://127.0.0.1:${port}`,
      fetch: counting,
      retry: { limit: 2, initialDelayMs: 1 },
    });
    await expect(offline.get('run_1')).rejects.toBeInstanceOf(TetherConnectionError);
    expect(calls).toBe(3);
  });

  it('never retries a POST that may have reached the server', async () => {
    const port = await closedPort();
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const offline = new TetherClient({ baseUrl: `http://127.0.0.1:${port}`, fetch: counting, retry: 2 });
    await expect(offline.answer('run_1', 'q1', 'x')).rejects.toBeInstanceOf(TetherConnectionError);
    expect(calls).toBe(1);
  });

  it('validates its options, naming the field', () => {
    expect(() => new TetherClient({ baseUrl: '' })).toThrow(/baseUrl is required/);
    expect(() => new TetherClient({ baseUrl: 'ftp://x' })).toThrow(/http or https/);
    expect(() => new TetherClient({ baseUrl: 'http://x', timeoutMs: 0 })).toThrow(
      /timeoutMs must be a number > 0/,
    );
    expect(() => new TetherClient({ baseUrl: 'http://x', retry: -1 })).toThrow(/retry.limit/);
  });

  it('keeps a base path and drops a trailing slash', async () => {
    const prefixed = new TetherClient({ baseUrl: `${api.baseUrl}/`, apiKey: 'key-a', retry: false });
    await prefixed.list();
    expect(api.requests[0]?.path).toBe('/v1/runs');
    expect(new TetherClient({ baseUrl: 'http://h/tether/' }).baseUrl).toBe('http://h/tether');
  });
});

describe('files and tools', () => {
  it('lists and downloads the files a run left', async () => {
    const fake = api.createRun(
      { input: 'x', files: { 'src/a.ts': 'export {};\n', 'README.md': '# hi\n' } },
      'tenant-a',
    );
    fake.files.set('out/report.md', 'done\n');
    const listing = await client.files(fake.run.id);
    expect(listing).toEqual({
      files: [
        { path: 'README.md', size: 5 },
        { path: 'out/report.md', size: 5 },
        { path: 'src/a.ts', size: 11 },
      ],
      truncated: false,
    });
    const blob = await client.file(fake.run.id, 'out/report.md');
    expect(await blob.text()).toBe('done\n');
    expect(api.requests.at(-1)?.path).toBe(`/v1/runs/${fake.run.id}/files/out/report.md`);
    const missing = await client.file(fake.run.id, 'nope.txt').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TetherNotFoundError);
    expect(missing).toMatchObject({ code: 'ERR_FILE_NOT_FOUND' });
  });

  it('reads the tool catalog', async () => {
    api.tools = [
      { name: 'read_file', toolset: 'files', description: 'Reads a file', parameters: { type: 'object' } },
    ];
    const catalog = await client.tools();
    expect(catalog.tools.map((t) => t.name)).toEqual(['read_file']);
  });

  it('reads the model catalog, and says so when a server answers without one', async () => {
    expect(await client.models()).toMatchObject({ defaultProfile: 'default', replay: true });
    api.models = { profiles: [], defaultProfile: null, replay: false };
    expect(await client.models()).toEqual({ profiles: [], defaultProfile: null, replay: false });
    expect(api.requests.at(-1)?.path).toBe('/v1/models');
    api.models = undefined;
    await expect(client.models()).rejects.toBeInstanceOf(TetherNotFoundError);
  });

  it('reads pages of events for pollers, with the cursor of the next page', async () => {
    const fake = api.createRun({ input: 'x' }, 'tenant-a');
    api.append(fake.run.id, 'run.started', { attempt: 1, workerId: 'w' });
    const first = await client.events(fake.run.id, { limit: 1 });
    expect(first.data.map((e) => e.type)).toEqual(['run.queued']);
    expect(first.nextCursor).toBe(first.data[0]?.id);
    expect(api.requests.at(-1)?.headers.accept).toBe('application/json');
    const second = await client.events(fake.run.id, { after: first.nextCursor ?? undefined });
    expect(second.data.map((e) => e.type)).toEqual(['run.started']);
    // Nothing new on a live run: the same cursor again.
    const idle = await client.events(fake.run.id, { after: second.nextCursor ?? undefined });
    expect(idle).toEqual({ data: [], nextCursor: second.nextCursor });
    api.append(fake.run.id, 'run.completed', { output: 'ok' });
    const last = await client.events(fake.run.id, { after: second.nextCursor ?? undefined });
    expect(last.data.map((e) => e.type)).toEqual(['run.completed']);
    expect(last.nextCursor).toBeNull();
  });
});
