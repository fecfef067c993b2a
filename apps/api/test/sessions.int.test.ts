/**
 * Sessions end to end, over real ports: API and worker processes on the test
 * Redis (a Redis Cluster in the `cluster` project) and replay runs. Here: bash
 * in the session's workspace under the sandbox, tenancy, bad input and the
 * session token, each multitask strategy, kill -9 of the worker running a
 * session's run, and deleting a session. Runs in order and the transcript, and
 * what the model receives of the history (a fake OpenAI-compatible server), are
 * in sessions-history.int.test.ts; what both share is in sessions-harness.ts.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Run, Session } from '@tether/protocol';
import { createRedisConnection, isCluster } from '@tether/store/redis';
import { testRedisTarget } from '@tether/testing';
import { probeBwrap } from '@tether/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS, BETA } from './helper.js';
import { call, startApi, startWorker, stopAll } from './processes.js';
import { cleanups, createSession, messages, replay, runOf, send, setup, until } from './sessions-harness.js';

/** Whether bubblewrap works here (CI installs it). */
const bwrap = (await probeBwrap()).ok;

afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('sessions', () => {
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
