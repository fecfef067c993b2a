/**
 * A session's history end to end, over real ports: API and worker processes on
 * the test Redis (a Redis Cluster in the `cluster` project), replay runs, and a
 * fake OpenAI-compatible server where what the model receives matters. Here:
 * messages run one after another and the transcript and event stream in order;
 * the history the model is sent on later turns, through a suspension, after a
 * question in return mode, and windowed to a budget. The rest of sessions is in
 * sessions.int.test.ts; what both share is in sessions-harness.ts.
 */
import type { Run, RunEvent, Session } from '@tether/protocol';
import { FakeOpenAIServer, streamText, streamToolCalls } from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS } from './helper.js';
import { call, startApi, startWorker, stopAll } from './processes.js';
import {
  cleanups,
  createSession,
  messages,
  replay,
  runOf,
  send,
  setup,
  TERMINAL,
  until,
} from './sessions-harness.js';
import { openSse } from './sse-client.js';

afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

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
