import type { Run, RunEvent } from '@tether/protocol';
import { newId } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, expectServing, replayRun, submit } from './helper.js';

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Moves a submitted run to `waiting_for_input` on two client tool calls, as a
 * worker would. Returns their request ids.
 */
async function waitOnTools(app: FastifyInstance, runId: string, expiresInMs = 60_000): Promise<string[]> {
  const token = 'test-worker:1';
  const claimed = await app.store.claim(runId, token, 1, 'test-worker');
  if (claimed.status !== 'ok') throw new Error(`claim answered ${claimed.status}`);
  const expiresAt = new Date(Date.now() + expiresInMs).toISOString();
  const calls = ['Oslo', 'Rome'].map((city, i) => ({
    requestId: newId('tcr'),
    callId: `call_0_${i}`,
    name: 'get_weather',
    arguments: { city },
    expiresAt,
  }));
  await app.store.requestToolCalls(runId, token, calls);
  return calls.map((c) => c.requestId);
}

function post(
  app: FastifyInstance,
  runId: string,
  requestId: string,
  payload: object,
  headers: Record<string, string> = ACME,
) {
  return app.inject({
    method: 'POST',
    url: `/v1/runs/${runId}/tool-outputs/${requestId}`,
    headers,
    payload,
  });
}

const code = (response: { json: <T>() => T }) => response.json<{ error: { code: string } }>().error.code;

describe('POST /v1/runs/:id/tool-outputs/:requestId', () => {
  it('takes the first output of each call (200), shows the calls still waiting, and queues the run after the last', async () => {
    const { app } = await build();
    const id = await submit(app, ACME, replayRun(undefined, { tools: [weather] }));
    const [oslo, rome] = (await waitOnTools(app, id)) as [string, string];
    const read = async () =>
      (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect((await read()).pendingToolCalls?.map((c) => c.requestId)).toEqual([oslo, rome]);

    const first = await post(app, id, rome, { output: 'sunny', isError: false });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ ok: true });
    const second = await post(app, id, rome, { output: 'rain' });
    expect(second.statusCode).toBe(409);
    expect(code(second)).toBe('ERR_TOOL_OUTPUT_ALREADY_POSTED');
    const waiting = await read();
    expect(waiting.status).toBe('waiting_for_input');
    expect(waiting.pendingToolCalls).toEqual([
      expect.objectContaining({ requestId: oslo, arguments: { city: 'Oslo' } }),
    ]);

    expect((await post(app, id, oslo, { output: 'no such city', isError: true })).statusCode).toBe(200);
    const after = await read();
    expect(after.status).toBe('queued');
    expect(after.pendingToolCalls).toBeUndefined();
    const page = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/events`,
      headers: { ...ACME, accept: 'application/json' },
    });
    const received = page.json<{ data: RunEvent[] }>().data.filter((e) => e.type === 'tool.output_received');
    expect(received.map((e) => e.data)).toEqual([
      { requestId: rome, isError: false },
      { requestId: oslo, isError: true },
    ]);
  });

  it('answers 404 for an unknown request or another tenant, 400 for a malformed id or past the output limit, 409 past the deadline or once the run ended', async () => {
    const { app } = await build();
    const id = await submit(app, ACME, replayRun(undefined, { tools: [weather] }));
    const [oslo] = (await waitOnTools(app, id)) as [string, string];
    const unknown = await post(app, id, 'tcr_0000000000000000000000000a', { output: 'x' });
    expect(unknown.statusCode).toBe(404);
    expect(code(unknown)).toBe('ERR_TOOL_OUTPUT_UNKNOWN');
    const foreign = await post(app, id, oslo, { output: 'x' }, BETA);
    expect(foreign.statusCode).toBe(404);
    expect(code(foreign)).toBe('ERR_RUN_NOT_FOUND');
    expect((await post(app, id, 'clr_0000000000000000000000000a', { output: 'x' })).statusCode).toBe(400);
    const tooLong = await post(app, id, oslo, { output: 'x'.repeat(100_001) });
    expect(tooLong.statusCode).toBe(400);
    expect(code(tooLong)).toBe('ERR_VALIDATION');
    expect((await post(app, id, oslo, { output: 'x'.repeat(100_000) })).statusCode).toBe(200);

    const expired = await submit(app, ACME, replayRun(undefined, { tools: [weather] }));
    const [late] = (await waitOnTools(app, expired, -1)) as [string, string];
    const past = await post(app, expired, late, { output: 'x' });
    expect(past.statusCode).toBe(409);
    expect(code(past)).toBe('ERR_TOOL_OUTPUT_EXPIRED');

    const ended = await submit(app, ACME, replayRun(undefined, { tools: [weather] }));
    const [call] = (await waitOnTools(app, ended)) as [string, string];
    await app.inject({ method: 'POST', url: `/v1/runs/${ended}/cancel`, headers: ACME });
    const after = await post(app, ended, call, { output: 'x' });
    expect(after.statusCode).toBe(409);
    expect(code(after)).toBe('ERR_TOOL_OUTPUT_NOT_PENDING');
  });
});

describe('POST /v1/runs with client tools', () => {
  it.each([
    [
      'a clash with a built-in tool of the run',
      [{ ...weather, name: 'read_file' }],
      /"read_file" is the name of a built-in tool/,
    ],
    ['a name given twice', [weather, weather], /declared twice/],
    [
      'a schema that is not an object schema',
      [{ ...weather, parameters: { type: 'array' } }],
      /"type": "object"/,
    ],
    [
      'a schema that does not compile',
      [{ ...weather, parameters: { type: 'object', properties: { city: { type: 'town' } } } }],
      /not a valid JSON Schema/,
    ],
    [
      'more than 64 KB of schemas',
      [{ ...weather, parameters: { type: 'object', description: 'x'.repeat(65_536) } }],
      /more than the 65536 allowed/,
    ],
  ])('refuses %s (400 ERR_CLIENT_TOOLS_INVALID naming it)', async (_what, tools, message) => {
    const { app } = await build();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(undefined, { tools: tools as (typeof weather)[] }),
    });
    expect(response.statusCode, response.body).toBe(400);
    const { error } = response.json<{ error: { code: string; message: string } }>();
    expect(error.code).toBe('ERR_CLIENT_TOOLS_INVALID');
    expect(error.message).toMatch(message);
    expect(await expectServing(app)).toEqual([]);
  });

  it("accepts a built-in tool's name when the run's toolsets do not have it, and a bad tool name is 400", async () => {
    const { app } = await build();
    await submit(
      app,
      ACME,
      replayRun(undefined, { toolsets: ['planning'], tools: [{ ...weather, name: 'bash' }] }),
    );
    const badName = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(undefined, { tools: [{ ...weather, name: 'no spaces' }] }),
    });
    expect(badName.statusCode).toBe(400);
    expect(code(badName)).toBe('ERR_VALIDATION');
  });

  it("gives a session's runs its default tools (a run's own replace them), and refuses a bad default at create", async () => {
    const { app } = await build();
    const created = await app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: ACME,
      payload: { defaults: { tools: [weather], toolTimeoutMs: 30_000 } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const sessionId = created.json<{ id: string }>().id;
    const message = async (extra: object) => {
      const response = await app.inject({
        method: 'POST',
        url: `/v1/sessions/${sessionId}/runs`,
        headers: ACME,
        payload: { input: 'weather?', model: { provider: 'replay', script: [{ content: 'ok' }] }, ...extra },
      });
      expect(response.statusCode).toBe(202);
      return (await app.store.get(response.json<{ id: string }>().id))?.spec;
    };
    const first = await message({});
    expect(first?.tools).toEqual([weather]);
    expect(first?.toolTimeoutMs).toBe(30_000);
    const own = { ...weather, name: 'get_time' };
    const second = await message({ tools: [own], multitask: 'enqueue' });
    expect(second?.tools).toEqual([own]);
    // Another tenant cannot reach the session.
    const other = await app.inject({
      method: 'POST',
      url: `/v1/sessions/${sessionId}/runs`,
      headers: BETA,
      payload: { input: 'weather?' },
    });
    expect(other.statusCode).toBe(404);

    const bad = await app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: ACME,
      payload: { defaults: { tools: [{ ...weather, parameters: { type: 'string' } }] } },
    });
    expect(bad.statusCode).toBe(400);
    expect(code(bad)).toBe('ERR_CLIENT_TOOLS_INVALID');
    // Healthy, and the refused session made no run: only the two messages' runs are listed.
    expect(await expectServing(app)).toHaveLength(2);
  });
});
