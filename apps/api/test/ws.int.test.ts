/**
 * The WebSocket gateway end to end, over real ports: API and worker processes
 * on the test Redis (a Redis Cluster in the `cluster` project), replay runs
 * that ask questions, and real `ws` clients. Here: a session across two APIs
 * and two workers, reconnects and resumption, cancels and timed-out questions,
 * client tools, approvals, steering, and tenancy; an API in process resuming
 * its sessions when its event subscriber reconnects. The gateway's limits
 * (bad and oversized frames, rate limits, floods, sockets per tenant, slow
 * readers, failed upgrades) are in ws-limits.int.test.ts; what both share is
 * in ws-harness.ts.
 */
import { newId, type Run, type RunEvent, type WsServerFrame } from '@tether/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ACME, API_KEYS, BETA, endRun } from './helper.js';
import { call, startApi, startWorker, stopAll } from './processes.js';
import { openWs, type WsConnection } from './ws-client.js';
import {
  ASKS,
  cleanups,
  delta,
  ids,
  listening,
  log,
  ofType,
  replay,
  sessionRun,
  setup,
  socket,
  WORKER,
  wsUrl,
} from './ws-harness.js';

afterEach(async (context) => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await stopAll(context);
});

/** Every event of a run, read through the JSON pages. */
async function runEvents(base: string, runId: string): Promise<RunEvent[]> {
  const page = await call<{ data: RunEvent[] }>(
    base,
    'GET',
    `/v1/runs/${runId}/events?limit=1000`,
    undefined,
    {
      ...ACME,
      accept: 'application/json',
    },
  );
  expect(page.status).toBe(200);
  return page.body.data;
}

/** The `event` frames' events of one run. */
function eventsOf(connection: WsConnection, runId: string): RunEvent[] {
  return connection
    .ofType('event')
    .map((frame) => frame.event as RunEvent)
    .filter((event) => event.runId === runId);
}

describe('the WebSocket gateway', () => {
  it('serves a session across two APIs and two workers: a question answered by REST on the other API, then by clarify_response', async () => {
    const env = await setup();
    const [api1, api2] = await Promise.all([
      startApi(env, API_KEYS, 'api-1'),
      startApi(env, API_KEYS, 'api-2'),
      startWorker(env, 'worker-1'),
      startWorker(env, 'worker-2'),
    ]);
    const first = await socket(api1.base);
    first.send({ type: 'message', sessionId: null, content: 'Pick a colour', options: { model: ASKS } });
    const announced = await first.waitFor<Extract<WsServerFrame, { type: 'session' }>>(ofType('session'));
    expect(announced).toEqual({
      type: 'session',
      sessionId: expect.stringMatching(/^ses_/),
      token: expect.any(String),
    });
    const { sessionId, token } = announced;
    const started = await first.waitFor<Extract<WsServerFrame, { type: 'run_started' }>>(
      ofType('run_started'),
    );
    expect(started).toEqual({ type: 'run_started', sessionId, runId: expect.stringMatching(/^run_/) });
    const runId = started.runId;
    const asked = await first.waitFor<Extract<WsServerFrame, { type: 'clarify_request' }>>(
      ofType('clarify_request'),
    );
    expect(asked).toEqual({
      type: 'clarify_request',
      sessionId,
      data: {
        requestId: expect.stringMatching(/^clr_/),
        question: 'Which colour?',
        choices: ['red', 'blue'],
      },
    });
    // The announcement came first, then run_started, then the run's events.
    expect(first.frames.slice(0, 2).map((frame) => frame.type)).toEqual(['session', 'run_started']);

    // A second socket, on the other API, with the session token: the session from its start.
    const second = await socket(api2.base, {}, `?token=${encodeURIComponent(token)}`);
    second.send({ type: 'subscribe', sessionId, after: null });
    await second.waitFor(ofType('clarify_request'));

    // The answer by REST on the second API: both sockets hear it resolved, and the run's end.
    const { requestId } = asked.data;
    const answered = await call(api2.base, 'POST', `/v1/runs/${runId}/clarify/${requestId}`, {
      answer: 'blue',
    });
    expect(answered).toEqual({ status: 200, body: { ok: true } });
    for (const connection of [first, second]) {
      expect(await connection.waitFor(ofType('clarify_resolved'))).toEqual({
        type: 'clarify_resolved',
        sessionId,
        requestId,
        outcome: 'answered',
      });
      expect(await connection.waitFor(ofType('done'))).toEqual({
        type: 'done',
        sessionId,
        runId,
        status: 'completed',
        output: 'done',
      });
    }
    // Every event of the run, once each, in order, in the SSE envelope with the session event id.
    const log = await runEvents(api1.base, runId);
    const expected = log.map((event) => ({ ...event, id: `${runId}:${event.id}` }));
    expect(eventsOf(first, runId)).toEqual(expected);
    expect(eventsOf(second, runId)).toEqual(expected);

    // A second message from the token socket; its question answered by clarify_response from there.
    second.send({ type: 'message', sessionId, content: 'And now?', options: { model: ASKS } });
    const next = await second.waitFor<Extract<WsServerFrame, { type: 'run_started' }>>(ofType('run_started'));
    const again = await first.waitFor<Extract<WsServerFrame, { type: 'clarify_request' }>>(
      ofType('clarify_request', (frame) => frame.data.requestId !== requestId),
    );
    second.send({ type: 'clarify_response', sessionId, requestId: again.data.requestId, answer: 'red' });
    for (const connection of [first, second]) {
      await connection.waitFor(
        ofType(
          'clarify_resolved',
          (frame) => frame.requestId === again.data.requestId && frame.outcome === 'answered',
        ),
      );
    }
    // The first answer won: the same answer again from the other socket is refused.
    const before = first.frames.length;
    first.send({ type: 'clarify_response', sessionId, requestId: again.data.requestId, answer: 'blue' });
    expect(await first.waitFor(ofType('error'), { from: before })).toEqual({
      type: 'error',
      code: 'ERR_CLARIFY_ALREADY_ANSWERED',
      message: expect.any(String),
    });
    await first.waitFor(ofType('done', (frame) => frame.runId === next.runId));
    const run = await call<Run & { sessionId: string }>(api1.base, 'GET', `/v1/runs/${next.runId}`);
    expect(run.body).toMatchObject({ status: 'completed', output: 'done', sessionId });
    const told = (await runEvents(api1.base, next.runId)).find((event) => event.type === 'clarify.answered');
    expect(told?.data).toEqual({ requestId: again.data.requestId, answer: 'red' });
    // No question without choices shows them: a clarify_request never carries an empty list.
    for (const frame of [...first.ofType('clarify_request'), ...second.ofType('clarify_request')]) {
      expect(frame.data.choices).toEqual(['red', 'blue']);
    }
  });

  it('resumes after a reconnect with subscribe and after: nothing lost, nothing repeated', async () => {
    const env = await setup();
    const [api1, api2] = await Promise.all([
      startApi(env, API_KEYS, 'api-1'),
      startApi(env, API_KEYS, 'api-2'),
      startWorker(env),
    ]);
    const first = await socket(api1.base);
    first.send({
      type: 'message',
      sessionId: null,
      content: 'Ask me',
      options: {
        model: replay(
          { toolCalls: [{ name: 'clarify', arguments: { question: 'Why?' } }] },
          { content: 'ok' },
        ),
      },
    });
    const asked = await first.waitFor<Extract<WsServerFrame, { type: 'clarify_request' }>>(
      ofType('clarify_request'),
    );
    // No choices: the field is left out.
    expect(asked.data).toEqual({ requestId: expect.any(String), question: 'Why?' });
    const { sessionId } = asked;
    const runId = first.ofType('run_started')[0]?.runId as string;
    const seen = first.ofType('event').map((frame) => frame.event as RunEvent);
    const last = seen.at(-1) as RunEvent;
    first.close();
    await first.closed;

    // While nobody watches, the question is answered and the run ends; another follows.
    await call(api1.base, 'POST', `/v1/runs/${runId}/clarify/${asked.data.requestId}`, { answer: 'because' });
    const sent = await call<{ id: string }>(api1.base, 'POST', `/v1/sessions/${sessionId}/runs`, {
      input: 'again',
      model: replay({ content: 'second' }),
    });
    expect(sent.status).toBe(202);

    // Back on the other API, after the last event seen.
    const back = await socket(api2.base);
    back.send({ type: 'subscribe', sessionId, after: last.id });
    await back.waitFor(ofType('done', (frame) => frame.runId === sent.body.id));
    // The question's fate reaches the returning client, as the run's end does.
    expect(back.ofType('clarify_resolved')).toEqual([
      { type: 'clarify_resolved', sessionId, requestId: asked.data.requestId, outcome: 'answered' },
    ]);
    expect(back.ofType('done').map((frame) => [frame.runId, frame.output])).toEqual([
      [runId, 'ok'],
      [sent.body.id, 'second'],
    ]);
    const all = [
      ...(await runEvents(api1.base, runId)).map((event) => ({ ...event, id: `${runId}:${event.id}` })),
    ];
    all.push(
      ...(await runEvents(api1.base, sent.body.id)).map((event) => ({
        ...event,
        id: `${sent.body.id}:${event.id}`,
      })),
    );
    expect([...seen, ...back.ofType('event').map((frame) => frame.event as RunEvent)]).toEqual(all);
  });

  it('cancels: the open question is resolved as cancelled, then done', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const client = await socket(api.base);
    client.send({
      type: 'message',
      sessionId: null,
      content: 'Ask',
      options: { model: ASKS, clarify: { timeoutMs: 600_000 } },
    });
    const asked = await client.waitFor<Extract<WsServerFrame, { type: 'clarify_request' }>>(
      ofType('clarify_request'),
    );
    client.send({ type: 'cancel', sessionId: asked.sessionId });
    const done = await client.waitFor<Extract<WsServerFrame, { type: 'done' }>>(ofType('done'));
    expect(done).toEqual({
      type: 'done',
      sessionId: asked.sessionId,
      runId: expect.any(String),
      status: 'cancelled',
    });
    const resolved = client.ofType('clarify_resolved');
    expect(resolved).toEqual([
      {
        type: 'clarify_resolved',
        sessionId: asked.sessionId,
        requestId: asked.data.requestId,
        outcome: 'cancelled',
      },
    ]);
    // clarify_resolved came before done.
    expect(client.frames.indexOf(resolved[0] as WsServerFrame)).toBeLessThan(client.frames.indexOf(done));
    // A question that times out is resolved as timed_out.
    client.send({
      type: 'message',
      sessionId: asked.sessionId,
      content: 'Ask again',
      options: { model: ASKS, clarify: { timeoutMs: 1_000 } },
    });
    const timed = await client.waitFor<Extract<WsServerFrame, { type: 'clarify_resolved' }>>(
      ofType('clarify_resolved', (frame) => frame.requestId !== asked.data.requestId),
    );
    expect(timed.outcome).toBe('timed_out');
  });

  it('pushes tool_request for a client tool call and takes its output from tool_response: first output wins, other tenants and sessions refused', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const client = await socket(api.base);
    const lookup = { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object' } };
    client.send({
      type: 'message',
      sessionId: null,
      content: 'Look it up',
      options: {
        model: replay(
          { toolCalls: [{ name: 'lookup', arguments: { word: 'tether' } }] },
          { content: 'looked up' },
        ),
        tools: [lookup],
      },
    });
    const request = await client.waitFor<Extract<WsServerFrame, { type: 'tool_request' }>>(
      ofType('tool_request'),
    );
    const { sessionId, runId } = request;
    expect(request.data).toMatchObject({ name: 'lookup', arguments: { word: 'tether' }, callId: 'call_0_0' });
    const run = await call<Run>(api.base, 'GET', `/v1/runs/${runId}`);
    expect(run.body.pendingToolCalls).toEqual([request.data]);

    // Another tenant, and a token of another session: refused, nothing changed.
    const beta = await socket(api.base, BETA);
    beta.send({ type: 'tool_response', sessionId, requestId: request.data.requestId, output: 'x' });
    await beta.roundTrip();
    expect(beta.frames.map((frame) => (frame.type === 'error' ? frame.code : frame.type))).toEqual([
      'ERR_SESSION_NOT_FOUND',
      'pong',
    ]);
    const { token: otherToken } = (await call<{ token: string }>(api.base, 'POST', '/v1/sessions')).body;
    const scoped = await socket(api.base, {}, `?token=${encodeURIComponent(otherToken)}`);
    scoped.send({ type: 'tool_response', sessionId, requestId: request.data.requestId, output: 'x' });
    await scoped.roundTrip();
    expect(scoped.frames.map((frame) => (frame.type === 'error' ? frame.code : frame.type))).toEqual([
      'ERR_WS_SCOPE',
      'pong',
    ]);
    expect((await call<Run>(api.base, 'GET', `/v1/runs/${runId}`)).body.status).toBe('waiting_for_input');

    client.send({ type: 'tool_response', sessionId, requestId: request.data.requestId, output: 'a rope' });
    client.send({ type: 'tool_response', sessionId, requestId: request.data.requestId, output: 'again' });
    const done = await client.waitFor<Extract<WsServerFrame, { type: 'done' }>>(ofType('done'));
    expect(done).toMatchObject({ runId, status: 'completed', output: 'looked up' });
    expect(client.ofType('error').map((frame) => frame.type === 'error' && frame.code)).toEqual([
      'ERR_TOOL_OUTPUT_ALREADY_POSTED',
    ]);
    const result = (await runEvents(api.base, runId)).find((event) => event.type === 'tool.result');
    expect(result?.data).toMatchObject({ name: 'lookup', ok: true, content: 'a rope' });
  });

  it('pushes approval_request for a held call and takes the decision from approval_response: an edit the tool refuses is an error frame, other tenants refused', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const client = await socket(api.base);
    client.send({
      type: 'message',
      sessionId: null,
      content: 'Write it down',
      options: {
        model: replay(
          { toolCalls: [{ name: 'write_file', arguments: { path: 'note.txt', content: 'first draft' } }] },
          { content: 'written' },
        ),
        approval: { tools: ['write_file'] },
      },
    });
    const request = await client.waitFor<Extract<WsServerFrame, { type: 'approval_request' }>>(
      ofType('approval_request'),
    );
    const { sessionId, runId } = request;
    expect(request.data).toMatchObject({
      tool: 'write_file',
      callId: 'call_0_0',
      reason: 'tools: write_file',
      arguments: { path: 'note.txt', content: 'first draft' },
    });
    const run = await call<Run>(api.base, 'GET', `/v1/runs/${runId}`);
    expect(run.body.pendingApprovals).toEqual([request.data]);

    const { requestId } = request.data;
    const beta = await socket(api.base, BETA);
    beta.send({ type: 'approval_response', sessionId, requestId, decision: { decision: 'approve' } });
    await beta.roundTrip();
    expect(beta.frames.map((frame) => (frame.type === 'error' ? frame.code : frame.type))).toEqual([
      'ERR_SESSION_NOT_FOUND',
      'pong',
    ]);
    const edit = (content: unknown) => ({
      type: 'approval_response',
      sessionId,
      requestId,
      decision: { decision: 'edit', arguments: { path: 'note.txt', content } },
    });
    client.send(edit(42));
    await client.roundTrip();
    const refused = client.ofType('error');
    expect(refused.map((frame) => frame.type === 'error' && frame.code)).toEqual([
      'ERR_APPROVAL_ARGUMENTS_INVALID',
    ]);
    expect((await call<Run>(api.base, 'GET', `/v1/runs/${runId}`)).body.status).toBe('waiting_for_input');

    // A run named that is not of this session (a crew child's would carry its tag) decides nothing.
    client.send({ ...edit('reviewed'), runId: newId('run') });
    client.send({ ...edit('reviewed'), runId });
    client.send({ type: 'approval_response', sessionId, requestId, decision: { decision: 'reject' } });
    const done = await client.waitFor<Extract<WsServerFrame, { type: 'done' }>>(ofType('done'));
    expect(done).toMatchObject({ runId, status: 'completed', output: 'written' });
    expect(client.ofType('error').map((frame) => frame.type === 'error' && frame.code)).toEqual([
      'ERR_APPROVAL_ARGUMENTS_INVALID',
      'ERR_APPROVAL_UNKNOWN',
      'ERR_APPROVAL_ALREADY_DECIDED',
    ]);
    const result = (await runEvents(api.base, runId)).find((event) => event.type === 'tool.result');
    expect(result?.data).toMatchObject({ name: 'write_file', ok: true });
    const file = await fetch(`${api.base}/v1/runs/${runId}/files/note.txt`, { headers: ACME });
    expect(await file.text()).toBe('reviewed');
  });

  it("steers the session's live run with a steer frame: taken when the run wakes; an idle session or another tenant refused", async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const client = await socket(api.base);
    client.send({ type: 'message', sessionId: null, content: 'Pick a colour', options: { model: ASKS } });
    const asked = await client.waitFor<Extract<WsServerFrame, { type: 'clarify_request' }>>(
      ofType('clarify_request'),
    );
    const { sessionId } = asked;
    const beta = await socket(api.base, BETA);
    beta.send({ type: 'steer', sessionId, content: 'not yours' });
    await beta.roundTrip();
    expect(beta.frames.map((frame) => (frame.type === 'error' ? frame.code : frame.type))).toEqual([
      'ERR_SESSION_NOT_FOUND',
      'pong',
    ]);
    client.send({ type: 'steer', sessionId, content: 'Prefer dark colours' });
    const received = await client.waitFor<Extract<WsServerFrame, { type: 'event' }>>(
      ofType('event', (frame) => frame.event.type === 'message.received'),
    );
    expect(received.event.data).toMatchObject({ content: 'Prefer dark colours' });
    const { messageId } = received.event.data as { messageId: string };
    client.send({ type: 'clarify_response', sessionId, requestId: asked.data.requestId, answer: 'blue' });
    const delivered = await client.waitFor<Extract<WsServerFrame, { type: 'event' }>>(
      ofType('event', (frame) => frame.event.type === 'message.delivered'),
    );
    expect(delivered.event.data).toEqual({ messageId });
    await client.waitFor(ofType('done'));
    // Nothing live any more: a steer frame is refused, and the socket stays open.
    client.send({ type: 'steer', sessionId, content: 'too late' });
    await client.roundTrip();
    expect(client.ofType('error').map((frame) => frame.type === 'error' && frame.code)).toEqual([
      'ERR_SESSION_IDLE',
    ]);
  });

  it('keeps tenants apart: another tenant, or a token of another session, gets error frames and nothing else', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS), startWorker(env)]);
    const acme = await socket(api.base);
    acme.send({
      type: 'message',
      sessionId: null,
      content: 'Ask',
      options: { model: ASKS, clarify: { timeoutMs: 600_000 } },
    });
    const asked = await acme.waitFor<Extract<WsServerFrame, { type: 'clarify_request' }>>(
      ofType('clarify_request'),
    );
    const { sessionId } = asked;
    const { token: otherToken, id: otherSession } = (
      await call<{ id: string; token: string }>(api.base, 'POST', '/v1/sessions')
    ).body;

    const beta = await socket(api.base, BETA);
    beta.send({ type: 'subscribe', sessionId, after: null });
    beta.send({ type: 'clarify_response', sessionId, requestId: asked.data.requestId, answer: 'red' });
    beta.send({ type: 'cancel', sessionId });
    beta.send({ type: 'message', sessionId, content: 'hi', options: { model: replay({ content: 'x' }) } });
    await beta.roundTrip();
    expect(beta.frames.slice(0, 4).map((frame) => frame.type === 'error' && frame.code)).toEqual([
      'ERR_SESSION_NOT_FOUND',
      'ERR_SESSION_NOT_FOUND',
      'ERR_SESSION_NOT_FOUND',
      'ERR_SESSION_NOT_FOUND',
    ]);
    expect(beta.frames.slice(4)).toEqual([{ type: 'pong' }]);

    // A token of another session: its own session only, and no new ones.
    const scoped = await socket(api.base, {}, `?token=${encodeURIComponent(otherToken)}`);
    scoped.send({ type: 'subscribe', sessionId, after: null });
    scoped.send({ type: 'clarify_response', sessionId, requestId: asked.data.requestId, answer: 'red' });
    scoped.send({ type: 'cancel', sessionId });
    scoped.send({ type: 'message', sessionId: null, content: 'hi' });
    // In its own session, a message may not pick another memory scope (or toolsets, limits).
    scoped.send({
      type: 'message',
      sessionId: otherSession,
      content: 'hi',
      options: { memory: { scope: 'user-43' }, model: replay({ content: 'x' }) },
    });
    scoped.send({ type: 'subscribe', sessionId: otherSession, after: null });
    await scoped.roundTrip();
    expect(scoped.frames.map((frame) => (frame.type === 'error' ? frame.code : frame.type))).toEqual([
      'ERR_WS_SCOPE',
      'ERR_WS_SCOPE',
      'ERR_WS_SCOPE',
      'ERR_WS_SCOPE',
      'ERR_SESSION_TOKEN_FIELD',
      'pong',
    ]);

    // The question still waits, and acme's socket heard nothing of all that.
    const session = await call<{ status: string }>(api.base, 'GET', `/v1/sessions/${sessionId}`);
    expect(session.body.status).toBe('waiting_for_input');
    await acme.roundTrip();
    expect(acme.ofType('error')).toEqual([]);
    expect(acme.ofType('clarify_resolved')).toEqual([]);

    // Bad credentials: accepted, then closed with 1008.
    for (const [headers, query] of [
      [{ authorization: 'Bearer sk_nobody_0123456789' }, ''],
      [{}, `?token=${encodeURIComponent(`${otherToken.slice(0, -4)}AAAA`)}`],
      [{}, ''],
    ] as const) {
      const refused = await openWs(wsUrl(api.base, query), headers);
      expect((await refused.closed).code).toBe(1008);
    }
  });
});

describe('the WebSocket gateway, in process', () => {
  it('resumes its sessions from the log when the event subscriber reconnects: the socket stays open', async () => {
    const { app, base } = await listening();
    const { sessionId, runId } = await sessionRun(app);
    const client = await socket(base);
    client.send({ type: 'subscribe', sessionId, after: null });
    await client.waitFor(ofType('event', (frame) => frame.event.type === 'run.started'));
    app.subscriber.disconnect(true);
    // Appended while the subscriber is away: published to nobody, read from the log on resume.
    await app.store.append(runId, delta('while away'), WORKER);
    await vi.waitFor(() => expect(app.subscriber.status).toBe('ready'));
    await app.store.append(runId, delta('after the reconnect'), WORKER);
    await endRun(app, runId, { status: 'completed', output: 'done' }, WORKER);
    await client.waitFor(ofType('done'));
    expect(ids(client)).toEqual(await log(app, runId));
    expect(client.ofType('done')).toHaveLength(1);
  });
});
