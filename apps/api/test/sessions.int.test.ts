/**
 * Sessions end to end, over real ports: API and worker processes on the test
 * Redis (a Redis Cluster in the `cluster` project), replay runs, and a fake
 * OpenAI-compatible server where what the model receives matters.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Run, RunEvent, Session, TranscriptEntryView } from '@tether/protocol';
import { createRedisConnection, isCluster } from '@tether/store/redis';
import { FakeOpenAIServer, streamText, streamToolCalls, testRedisTarget } from '@tether/testing';
import { probeBwrap } from '@tether/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS, BETA } from './helper.js';
import { call, deployment, startApi, startWorker, stopAll } from './processes.js';
import { openSse } from './sse-client.js';

const cleanups: (() => Promise<void>)[] = [];
/** Whether bubblewrap works here (CI installs it). */
const bwrap = (await probeBwrap()).ok;

afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const setup = () => deployment('sessions');

type Created = Session & { token: string };

async function createSession(base: string, body?: unknown): Promise<Created> {
  const created = await call<Created>(base, 'POST', '/v1/sessions', body);
  expect(created.status).toBe(201);
  return created.body;
}

async function send(base: string, sessionId: string, body: Record<string, unknown>): Promise<string> {
  const sent = await call<{ id: string; sessionId: string }>(
    base,
    'POST',
    `/v1/sessions/${sessionId}/runs`,
    body,
  );
  expect(sent.status, JSON.stringify(sent.body)).toBe(202);
  expect(sent.body.sessionId).toBe(sessionId);
  return sent.body.id;
}

const replay = (...script: unknown[]) => ({ provider: 'replay', script });

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const TERMINAL = ['completed', 'failed', 'cancelled'];

function runOf(base: string, runId: string): Promise<Run> {
  return until(
    async () => (await call<Run>(base, 'GET', `/v1/runs/${runId}`)).body,
    (run) => TERMINAL.includes(run.status),
    `run ${runId} to end`,
  );
}

async function messages(base: string, sessionId: string): Promise<TranscriptEntryView[]> {
  const all: TranscriptEntryView[] = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; body: { data: TranscriptEntryView[]; nextCursor: string | null } } =
      await call(
        base,
        'GET',
        `/v1/sessions/${sessionId}/messages?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
    expect(page.status).toBe(200);
    all.push(...page.body.data);
    cursor = page.body.nextCursor;
  } while (cursor);
  return all;
}

describe('sessions', () => {
  it('runs messages one after another over a shared workspace, and keeps the transcript in order', async () => {
    const env = await setup();
    const [api] = await Promise.all([
      startApi(env, API_KEYS),
      startWorker(env, 'worker-1'),
      startWorker(env, 'worker-2'),
    ]);
    const session = await createSession(api.base, {
      metadata: { user: 'u-1' },
      files: { 'brief.md': 'the brief' },
      defaults: { clarify: { mode: 'return' } },
    });
    expect(session).toMatchObject({ status: 'idle', runs: 0, lastRunId: null, metadata: { user: 'u-1' } });
    expect(session.id).toMatch(/^ses_[0-9a-z]{26}$/);

    // Three messages at once: they run in order, never two at a time, on either worker.
    const first = await send(api.base, session.id, {
      input: 'write it',
      model: replay(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'brief.md' } }] },
        {
          toolCalls: [{ name: 'write_file', arguments: { path: 'out.txt', content: 'from the first run' } }],
        },
        { content: 'written' },
      ),
    });
    const second = await send(api.base, session.id, {
      input: 'read it',
      model: replay(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'out.txt' } }] },
        { content: 'read' },
      ),
    });
    const third = await send(api.base, session.id, { input: 'thanks', model: replay({ content: 'bye' }) });
    const busy = await call<Session>(api.base, 'GET', `/v1/sessions/${session.id}`);
    expect(busy.body).toMatchObject({ status: 'busy', runs: 3, lastRunId: third });

    const runs = [await runOf(api.base, first), await runOf(api.base, second), await runOf(api.base, third)];
    expect(runs.map((run) => [run.status, run.output, run.sessionId])).toEqual([
      ['completed', 'written', session.id],
      ['completed', 'read', session.id],
      ['completed', 'bye', session.id],
    ]);
    for (let i = 1; i < runs.length; i++) {
      expect(Date.parse(runs[i]?.startedAt as string)).toBeGreaterThanOrEqual(
        Date.parse(runs[i - 1]?.finishedAt as string),
      );
    }
    const idle = await call<Session>(api.base, 'GET', `/v1/sessions/${session.id}`);
    expect(idle.body).toMatchObject({ status: 'idle', runs: 3, lastRunId: third });

    const transcript = await messages(api.base, session.id);
    expect(
      transcript.map((entry) => [entry.role, entry.runId === first ? 1 : entry.runId === second ? 2 : 3]),
    ).toEqual([
      ['user', 1],
      ['assistant', 1],
      ['tool', 1],
      ['assistant', 1],
      ['tool', 1],
      ['assistant', 1],
      ['user', 2],
      ['assistant', 2],
      ['tool', 2],
      ['assistant', 2],
      ['user', 3],
      ['assistant', 3],
    ]);
    expect(transcript[0]?.content).toBe('write it');
    expect(transcript[2]?.content).toContain('the brief');
    // The second run read what the first wrote: one workspace.
    expect(transcript[8]?.content).toContain('from the first run');
    expect(transcript[7]?.toolCalls?.[0]?.id).toBe(transcript[8]?.toolCallId);

    // The session's stream: every run's events, run after run, each run's ending last of it.
    const stream = await openSse(`${api.base}/v1/sessions/${session.id}/events`, ACME);
    const events = await stream.waitFor((event) => event.type === 'run.completed' && event.runId === third);
    void events;
    const byRun = stream.events.map((event) => event.runId);
    expect([...new Set(byRun)]).toEqual([first, second, third]);
    expect(byRun).toEqual(
      [...byRun].sort((a, b) => [first, second, third].indexOf(a) - [first, second, third].indexOf(b)),
    );
    expect(
      stream.events.filter((event) => event.type.startsWith('run.') && TERMINAL.includes(event.type.slice(4)))
        .length,
    ).toBe(3);
    // Resumed after the second run's first event: exactly the rest.
    const cut = stream.events.findIndex((event) => event.runId === second);
    const resumed = await openSse(`${api.base}/v1/sessions/${session.id}/events`, {
      ...ACME,
      'last-event-id': (stream.events[cut] as RunEvent).id,
    });
    await resumed.waitFor((event) => event.type === 'run.completed' && event.runId === third);
    expect(resumed.events.map((event) => event.id)).toEqual(
      stream.events.slice(cut + 1).map((event) => event.id),
    );
    stream.close();
    resumed.close();

    // A poll-only client reads the same, page by page.
    const paged: RunEvent[] = [];
    for (let after = '0'; ; ) {
      const page = await call<{ data: RunEvent[]; nextCursor: string }>(
        api.base,
        'GET',
        `/v1/sessions/${session.id}/events?after=${encodeURIComponent(after)}&limit=4`,
        undefined,
        { ...ACME, accept: 'application/json' },
      );
      expect(page.status).toBe(200);
      if (page.body.data.length === 0) break;
      paged.push(...page.body.data);
      after = page.body.nextCursor;
    }
    expect(paged).toEqual(stream.events);
  });

  it.runIf(bwrap)(
    "runs bash in the session's workspace under the sandbox: its runs share it, and see no other",
    async () => {
      const env = await setup();
      const [api] = await Promise.all([
        startApi(env, API_KEYS),
        startWorker(env, 'worker', 4, { TETHER_SANDBOX: 'bwrap' }),
      ]);
      const other = await createSession(api.base, { files: { 'secret.txt': 'not yours' } });
      await runOf(api.base, await send(api.base, other.id, { input: 'x', model: replay({ content: 'x' }) }));
      const loner = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
        input: 'x',
        files: { 'mine.txt': 'a run of no session' },
        model: replay({ content: 'x' }),
      });
      await runOf(api.base, loner.body.id);
      const session = await createSession(api.base);
      const bash = (command: string) =>
        replay({ toolCalls: [{ name: 'bash', arguments: { command } }] }, { content: 'ok' });
      await runOf(
        api.base,
        await send(api.base, session.id, { input: 'write', model: bash('echo shared > f.txt') }),
      );
      const reading = await send(api.base, session.id, {
        input: 'read',
        model: bash('cat f.txt; ls -a .. ../..; cat ../*/secret.txt ../../*/mine.txt 2>&1 | head -3'),
      });
      expect((await runOf(api.base, reading)).status).toBe('completed');
      const result = (await messages(api.base, session.id)).find(
        (entry) => entry.role === 'tool' && entry.runId === reading,
      );
      expect(result?.content).toContain('shared');
      expect(result?.content).toContain(session.id);
      // Neither the other session nor the other run is there to see.
      expect(result?.content).not.toContain(other.id);
      expect(result?.content).not.toContain(loner.body.id);
      expect(result?.content).not.toContain('not yours');
      expect(result?.content).not.toContain('a run of no session');
    },
  );

  it('keeps other tenants out, refuses bad input clearly, and scopes the session token', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const session = await createSession(api.base);
    const path = `/v1/sessions/${session.id}`;
    for (const [method, route, body] of [
      ['GET', path, undefined],
      ['GET', `${path}/messages`, undefined],
      ['POST', `${path}/runs`, { input: 'hi', model: replay({ content: 'x' }) }],
      ['DELETE', path, undefined],
    ] as const) {
      const answer = await call<{ error: { code: string } }>(api.base, method, route, body, BETA);
      expect(answer.status, `${method} ${route}`).toBe(404);
      expect(answer.body.error.code).toBe('ERR_SESSION_NOT_FOUND');
    }
    expect(
      (await call<{ data: Session[] }>(api.base, 'GET', '/v1/sessions', undefined, BETA)).body.data,
    ).toEqual([]);
    const listed = await call<{ data: Session[] }>(api.base, 'GET', '/v1/sessions');
    expect(listed.body.data.map((s) => s.id)).toContain(session.id);

    // Bad input: a clear 400, and the server is fine after.
    const bad = await call<{ error: { code: string; message: string } }>(api.base, 'POST', `${path}/runs`, {
      input: 'hi',
      multitask: 'sometimes',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe(
      'body.multitask must be one of "enqueue", "reject", "interrupt", "steer"',
    );
    expect((await call(api.base, 'GET', '/v1/sessions/ses_nope')).status).toBe(400);
    expect((await call(api.base, 'POST', '/v1/sessions', { defaults: { toolsets: ['nope'] } })).status).toBe(
      400,
    );
    expect((await call(api.base, 'POST', '/v1/sessions', { surprise: 1 })).status).toBe(400);

    // The session token: this session only; messages yes, deletion and listing no.
    const bearer = { authorization: `Bearer ${session.token}` };
    expect(
      (await call<Session>(api.base, 'GET', `${path}?token=${session.token}`, undefined, {})).status,
    ).toBe(200);
    const runId = await (async () => {
      const sent = await call<{ id: string }>(
        api.base,
        'POST',
        `${path}/runs`,
        { input: 'hi', model: replay({ content: 'hello' }) },
        bearer,
      );
      expect(sent.status).toBe(202);
      return sent.body.id;
    })();
    expect((await call<Run>(api.base, 'GET', `/v1/runs/${runId}`, undefined, bearer)).status).toBe(200);
    expect((await call(api.base, 'DELETE', path, undefined, bearer)).status).toBe(401);
    expect((await call(api.base, 'GET', '/v1/sessions', undefined, bearer)).status).toBe(401);
    const other = await createSession(api.base);
    expect((await call(api.base, 'GET', `/v1/sessions/${other.id}`, undefined, bearer)).status).toBe(401);
    const loner = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
      input: 'x',
      model: replay({ content: 'x' }),
    });
    expect((await call(api.base, 'GET', `/v1/runs/${loner.body.id}`, undefined, bearer)).status).toBe(401);
    expect((await call(api.base, 'GET', '/readyz', undefined, {})).status).toBe(200);

    // An Idempotency-Key replays the same message to the same session only.
    const message = { input: 'once', model: replay({ content: 'x' }) };
    const key = { ...ACME, 'idempotency-key': `msg-${session.id}` };
    const once = await call<{ id: string }>(api.base, 'POST', `${path}/runs`, message, key);
    const again = await call<{ id: string }>(api.base, 'POST', `${path}/runs`, message, key);
    expect([once.status, again.status, again.body.id]).toEqual([202, 202, once.body.id]);
    const elsewhere = await call<{ error: { code: string } }>(
      api.base,
      'POST',
      `/v1/sessions/${other.id}/runs`,
      message,
      key,
    );
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([409, 'ERR_IDEMPOTENCY_CONFLICT']);
  });

  it('handles a second message by each multitask strategy', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const session = await createSession(api.base);
    const asks = replay(
      { toolCalls: [{ name: 'clarify', arguments: { question: 'Which colour?' } }] },
      { content: 'ok' },
    );
    const waiting = await send(api.base, session.id, {
      input: 'ask me',
      model: asks,
      clarify: { timeoutMs: 600_000 },
    });
    await until(
      async () => (await call<Session>(api.base, 'GET', `/v1/sessions/${session.id}`)).body,
      (s) => s.status === 'waiting_for_input',
      'the session to wait',
    );
    const view = (await call<Session>(api.base, 'GET', `/v1/sessions/${session.id}`)).body;
    expect(view.pendingClarify).toMatchObject({ runId: waiting, question: 'Which colour?' });

    // reject: 409, and nothing was added.
    const refused = await call<{ error: { code: string } }>(
      api.base,
      'POST',
      `/v1/sessions/${session.id}/runs`,
      {
        input: 'are you there?',
        multitask: 'reject',
        model: replay({ content: 'x' }),
      },
    );
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('ERR_SESSION_BUSY');
    expect((await call<Session>(api.base, 'GET', `/v1/sessions/${session.id}`)).body.runs).toBe(1);

    // steer: the message goes into the waiting run (taken when it wakes); no run is created.
    const steered = await call<{ id: string; status: string; messageId: string }>(
      api.base,
      'POST',
      `/v1/sessions/${session.id}/runs`,
      { input: 'prefer dark colours', multitask: 'steer' },
    );
    expect(steered.status).toBe(202);
    expect(steered.body).toMatchObject({
      id: waiting,
      status: 'waiting_for_input',
      sessionId: session.id,
      messageId: expect.stringMatching(/^msg_/),
    });
    expect((await call<Session>(api.base, 'GET', `/v1/sessions/${session.id}`)).body.runs).toBe(1);
    const logged = await call<{ data: { type: string; data: unknown }[] }>(
      api.base,
      'GET',
      `/v1/runs/${waiting}/events`,
      undefined,
      { ...ACME, accept: 'application/json' },
    );
    expect(logged.body.data.at(-1)).toEqual(
      expect.objectContaining({
        type: 'message.received',
        data: { messageId: steered.body.messageId, content: 'prefer dark colours' },
      }),
    );

    // enqueue: waits behind the question.
    const queued = await send(api.base, session.id, {
      input: 'and then',
      model: replay({ content: 'after' }),
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await call<Run>(api.base, 'GET', `/v1/runs/${queued}`)).body.status).toBe('queued');

    // interrupt: the waiting run (and the queued one) are cancelled; the new one runs.
    const interrupting = await send(api.base, session.id, {
      input: 'never mind',
      multitask: 'interrupt',
      model: replay({ content: 'fine' }),
    });
    expect((await runOf(api.base, waiting)).status).toBe('cancelled');
    expect((await runOf(api.base, queued)).status).toBe('cancelled');
    expect(await runOf(api.base, interrupting)).toMatchObject({ status: 'completed', output: 'fine' });
    const transcript = await messages(api.base, session.id);
    // The question's call got a result saying it was interrupted: the pair stays whole.
    const call0 = transcript.find((entry) => entry.toolCalls?.[0]?.name === 'clarify');
    const result = transcript.find((entry) => entry.toolCallId === call0?.toolCalls?.[0]?.id);
    expect(result?.content).toMatch(/interrupted/);
    expect(transcript.at(-1)).toMatchObject({ role: 'assistant', content: 'fine', runId: interrupting });
  });

  it("survives kill -9 of the worker running a session's run: it resumes elsewhere, the next one follows, each turn once", async () => {
    const env = await setup();
    const fast = { TETHER_LOCK_DURATION_MS: '2000', TETHER_STALLED_INTERVAL_MS: '1000' };
    const [api, a] = await Promise.all([startApi(env, API_KEYS), startWorker(env, 'worker-a', 4, fast)]);
    const session = await createSession(api.base);
    const first = await send(api.base, session.id, {
      input: 'slow',
      model: replay(
        { toolCalls: [{ name: 'bash', arguments: { command: 'sleep 1.5; echo one >> one.txt' } }] },
        { content: 'first done' },
      ),
    });
    const second = await send(api.base, session.id, {
      input: 'next',
      model: replay({ content: 'second done' }),
    });
    await until(
      async () => (await call<Run>(api.base, 'GET', `/v1/runs/${first}`)).body,
      (run) => run.status === 'running',
      'the first run to start',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await a.stop('SIGKILL');
    await startWorker(env, 'worker-b', 4, fast);
    const runs = [await runOf(api.base, first), await runOf(api.base, second)];
    expect(runs.map((run) => [run.status, run.output])).toEqual([
      ['completed', 'first done'],
      ['completed', 'second done'],
    ]);
    expect(Date.parse(runs[1]?.startedAt as string)).toBeGreaterThanOrEqual(
      Date.parse(runs[0]?.finishedAt as string),
    );
    const transcript = await messages(api.base, session.id);
    expect(transcript.filter((entry) => entry.role === 'user').map((entry) => entry.content)).toEqual([
      'slow',
      'next',
    ]);
    expect(transcript.filter((entry) => entry.runId === first).map((entry) => entry.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
  });

  it('deletes a session with everything it owned, and refuses while a run is live unless asked to cancel', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const session = await createSession(api.base, { files: { 'a.txt': 'a' } });
    const done = await send(api.base, session.id, {
      input: 'write',
      model: replay(
        { toolCalls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'b' } }] },
        { content: 'ok' },
      ),
    });
    await runOf(api.base, done);
    const live = await send(api.base, session.id, {
      input: 'ask',
      model: replay({ toolCalls: [{ name: 'clarify', arguments: { question: 'Q?' } }] }, { content: 'x' }),
      clarify: { timeoutMs: 600_000 },
    });
    await until(
      async () => (await call<Run>(api.base, 'GET', `/v1/runs/${live}`)).body,
      (run) => run.status === 'waiting_for_input',
      'the run to wait',
    );
    const workspace = join(env.workspaceRoot, 'sessions', session.id);
    await access(join(workspace, 'b.txt'));

    const refused = await call<{ error: { code: string } }>(api.base, 'DELETE', `/v1/sessions/${session.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('ERR_SESSION_BUSY');
    expect((await call(api.base, 'DELETE', `/v1/sessions/${session.id}?cancel=true`)).status).toBe(204);

    expect((await call(api.base, 'GET', `/v1/sessions/${session.id}`)).status).toBe(404);
    expect((await call(api.base, 'GET', `/v1/sessions/${session.id}/messages`)).status).toBe(404);
    for (const runId of [done, live])
      expect((await call(api.base, 'GET', `/v1/runs/${runId}`)).status).toBe(404);
    await expect(access(workspace)).rejects.toThrow();
    const listed = await call<{ data: Run[] }>(api.base, 'GET', '/v1/runs');
    expect(listed.body.data.map((run) => run.id)).not.toContain(done);
    // No key of the session is left in Redis (on a cluster: on any master).
    const redis = createRedisConnection({
      ...testRedisTarget(),
      mode: 'wait',
      name: 'sessions-test',
      onError: () => {},
    });
    try {
      const tag = `{s_${session.id.slice(-16)}}`;
      const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
      let left = 0;
      for (const node of nodes) left += (await node.keys(`*${tag}*`)).length;
      expect(left).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

describe('what the model sees in a session', () => {
  async function modelStack(budget?: number) {
    const env = await setup();
    const fake = await new FakeOpenAIServer().start();
    cleanups.push(() => fake.close());
    const model = { TETHER_MODEL: 'fake-model', OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: 'sk-fake' };
    const workerEnv = budget ? { ...model, TETHER_SESSION_HISTORY_TOKENS: String(budget) } : model;
    const [api] = await Promise.all([
      startApi(env, API_KEYS, 'api', model),
      startWorker(env, 'worker', 4, workerEnv),
    ]);
    return { api, fake };
  }

  /** The messages of the model request `index`, without the system prompt. */
  function conversation(fake: FakeOpenAIServer, index: number) {
    const body = fake.requests[index]?.body as {
      messages: {
        role: string;
        content?: string;
        tool_calls?: { id: string; function: { name: string } }[];
        tool_call_id?: string;
      }[];
    };
    return body.messages.slice(1).map((message) => ({
      role: message.role,
      content: message.content ?? null,
      ...(message.tool_calls ? { calls: message.tool_calls.map((c) => `${c.id}:${c.function.name}`) } : {}),
      ...(message.tool_call_id ? { answers: message.tool_call_id } : {}),
    }));
  }

  it('sends the history in order with tool pairs intact on the second, third and tenth turn', async () => {
    const { api, fake } = await modelStack();
    const session = await createSession(api.base);
    // Turn 1 calls a tool, then answers; every later turn answers at once.
    fake.enqueue(
      streamToolCalls([{ id: 'call_1', name: 'list_dir', arguments: '{"path":"."}' }]),
      streamText('turn 1 done'),
    );
    for (let turn = 2; turn <= 10; turn++) fake.enqueue(streamText(`turn ${turn} done`));
    for (let turn = 1; turn <= 10; turn++) {
      const runId = await send(api.base, session.id, { input: `message ${turn}` });
      expect((await runOf(api.base, runId)).output).toBe(`turn ${turn} done`);
    }
    // Request 2 is turn 2's: turn 1 whole (its call and result paired), then turn 2's input.
    expect(conversation(fake, 2)).toEqual([
      { role: 'user', content: 'message 1' },
      { role: 'assistant', content: null, calls: ['call_1:list_dir'] },
      { role: 'tool', content: expect.any(String), answers: 'call_1' },
      { role: 'assistant', content: 'turn 1 done' },
      { role: 'user', content: 'message 2' },
    ]);
    expect(conversation(fake, 3)).toEqual([
      ...conversation(fake, 2),
      { role: 'assistant', content: 'turn 2 done' },
      { role: 'user', content: 'message 3' },
    ]);
    const tenth = conversation(fake, 10);
    expect(tenth.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(
      Array.from({ length: 10 }, (_, i) => `message ${i + 1}`),
    );
    expect(tenth.at(-2)).toEqual({ role: 'assistant', content: 'turn 9 done' });
  });

  it('keeps the history through a suspension: stored by reference, the resumed attempt sends it again', async () => {
    const { api, fake } = await modelStack();
    const session = await createSession(api.base);
    fake.enqueue(
      streamText('first answer'),
      streamToolCalls([{ id: 'call_q', name: 'clarify', arguments: '{"question":"Which colour?"}' }]),
      streamText('Green, then.'),
    );
    await runOf(api.base, await send(api.base, session.id, { input: 'first message' }));
    const asking = await send(api.base, session.id, { input: 'paint it', clarify: { timeoutMs: 600_000 } });
    const waiting = await until(
      async () => (await call<Run>(api.base, 'GET', `/v1/runs/${asking}`)).body,
      (run) => run.status === 'waiting_for_input',
      'the question',
    );
    const answered = await call(
      api.base,
      'POST',
      `/v1/runs/${asking}/clarify/${waiting.pendingClarify?.requestId}`,
      {
        answer: 'green',
      },
    );
    expect(answered.status).toBe(200);
    expect((await runOf(api.base, asking)).output).toBe('Green, then.');
    // After the resume, the model sees the first turn again, then this run's call and the answer.
    expect(conversation(fake, 2)).toEqual([
      { role: 'user', content: 'first message' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'paint it' },
      { role: 'assistant', content: null, calls: ['call_q:clarify'] },
      { role: 'tool', content: 'green', answers: 'call_q' },
    ]);
  });

  it('answers a question asked in return mode with the next message', async () => {
    const { api, fake } = await modelStack();
    const session = await createSession(api.base, { defaults: { clarify: { mode: 'return' } } });
    fake.enqueue(
      streamToolCalls([
        { id: 'call_q', name: 'clarify', arguments: '{"question":"Which colour?","choices":["red","blue"]}' },
      ]),
      streamText('Blue it is.'),
    );
    const asking = await send(api.base, session.id, { input: 'Paint the fence' });
    const asked = await runOf(api.base, asking);
    expect(asked.status).toBe('completed');
    expect(asked.output).toContain('Which colour?');
    const answering = await send(api.base, session.id, { input: 'blue' });
    expect((await runOf(api.base, answering)).output).toBe('Blue it is.');
    // The model sees its question, then the answer.
    const seen = conversation(fake, 1);
    expect(seen[0]).toEqual({ role: 'user', content: 'Paint the fence' });
    expect(seen[1]).toEqual({ role: 'assistant', content: null, calls: ['call_q:clarify'] });
    expect(seen[2]).toMatchObject({ role: 'tool', answers: 'call_q' });
    expect(seen[3]).toEqual({ role: 'assistant', content: asked.output });
    expect(seen[4]).toEqual({ role: 'user', content: 'blue' });
    expect(seen).toHaveLength(5);
  });

  it('windows a long transcript to the budget, dropping whole turns from the oldest end and saying so', async () => {
    const { api, fake } = await modelStack(1_000);
    const session = await createSession(api.base);
    const long = (turn: number) => `message ${turn} ${'lorem ipsum dolor sit amet '.repeat(40)}`;
    for (let turn = 1; turn <= 6; turn++) fake.enqueue(streamText(`turn ${turn} done`));
    let last = '';
    for (let turn = 1; turn <= 6; turn++) {
      last = await send(api.base, session.id, { input: long(turn) });
      await runOf(api.base, last);
    }
    const sixth = conversation(fake, 5);
    const users = sixth
      .filter((m) => m.role === 'user')
      .map((m) => (m.content as string).split(' ').slice(0, 2).join(' '));
    // Fewer turns than were said, the newest ones, and each kept turn whole.
    expect(users.length).toBeLessThan(6);
    expect(users.at(-1)).toBe('message 6');
    expect(users).toEqual(users.map((_, i) => `message ${6 - users.length + 1 + i}`));
    expect(sixth.filter((m) => m.role === 'assistant')).toHaveLength(users.length - 1);
    const events = await call<{ data: RunEvent[] }>(api.base, 'GET', `/v1/runs/${last}/events`, undefined, {
      ...ACME,
      accept: 'application/json',
    });
    const truncated = events.body.data.find((event) => event.type === 'session.truncated');
    expect(truncated?.data).toMatchObject({ droppedTurns: 6 - users.length, budget: 1_000 });
  });
});
