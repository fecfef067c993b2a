/**
 * Structured results (`output`): a schema refused at submit on every path, with nothing created;
 * and runs carried out by a worker process on a fake OpenAI-compatible model, read through the API
 * in process: a result accepted after an invalid try, a run failed past `output.maxAttempts`, and
 * another tenant kept out.
 */
import type { Run, RunEvent } from '@tether/protocol';
import { startFakeOpenAI, streamText, streamToolCalls } from '@tether/testing';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, BETA, build, expectServing, replayRun, runEvents } from './helper.js';
import { deployment, startWorker, stopAll } from './processes.js';

afterEach(stopAll);

const SCHEMA = {
  type: 'object',
  properties: { verdict: { type: 'string', enum: ['pass', 'fail'] }, score: { type: 'integer', minimum: 0 } },
  required: ['verdict'],
  additionalProperties: false,
};

const post = (app: FastifyInstance, url: string, payload: object, headers: Record<string, string> = ACME) =>
  app.inject({ method: 'POST', url, headers, payload });
const errorOf = (response: { json: <T>() => T }) =>
  response.json<{ error: { code: string; message: string } }>().error;

describe('POST /v1/runs with output', () => {
  it.each([
    [
      'a schema that is not valid JSON Schema',
      { schema: { type: 'object', properties: { a: { type: 'town' } } } },
      'ERR_OUTPUT_SCHEMA_INVALID',
      /^output\.schema is not a valid JSON Schema: /,
    ],
    [
      'a schema over 64 KB',
      { schema: { type: 'object', description: 'x'.repeat(65_536) } },
      'ERR_OUTPUT_SCHEMA_INVALID',
      /^output\.schema: \d+ bytes of JSON, more than the 65536 allowed\.$/,
    ],
    [
      'a schema of an array',
      { schema: { type: 'array', items: {} } },
      'ERR_OUTPUT_SCHEMA_INVALID',
      /^output\.schema must be a JSON Schema with "type": "object" .*its type is "array"\.$/,
    ],
    ['a schema that is no object', { schema: 'a verdict' }, 'ERR_VALIDATION', /^body\.output\.schema /],
    ['maxAttempts 0', { schema: SCHEMA, maxAttempts: 0 }, 'ERR_VALIDATION', /^body\.output\.maxAttempts /],
    ['maxAttempts 11', { schema: SCHEMA, maxAttempts: 11 }, 'ERR_VALIDATION', /^body\.output\.maxAttempts /],
    [
      'an unknown field',
      { schema: SCHEMA, retries: 2 },
      'ERR_VALIDATION',
      /^body\.output\.retries is not a known field/,
    ],
  ])('refuses %s (400 naming the field), creating nothing', async (_what, output, code, message) => {
    const { app } = await build();
    const response = await post(app, '/v1/runs', replayRun(undefined, { output } as object));
    expect(response.statusCode, response.body).toBe(400);
    expect(errorOf(response).code).toBe(code);
    expect(errorOf(response).message).toMatch(message);
    expect(await expectServing(app)).toEqual([]);
  });

  it('refuses a client tool named submit_result in a run with output, and a bad output in a session message', async () => {
    const { app } = await build();
    const clash = await post(
      app,
      '/v1/runs',
      replayRun(undefined, {
        output: { schema: SCHEMA },
        tools: [{ name: 'submit_result', description: '', parameters: { type: 'object' } }],
      }),
    );
    expect(clash.statusCode, clash.body).toBe(400);
    expect(errorOf(clash)).toMatchObject({
      code: 'ERR_CLIENT_TOOLS_INVALID',
      message: expect.stringContaining('"submit_result" is the name of a built-in tool'),
    });

    const session = await post(app, '/v1/sessions', {});
    expect(session.statusCode).toBe(201);
    const sessionId = session.json<{ id: string }>().id;
    const message = await post(
      app,
      `/v1/sessions/${sessionId}/runs`,
      replayRun(undefined, { output: { schema: { type: 'string' } } }),
    );
    expect(message.statusCode, message.body).toBe(400);
    expect(errorOf(message).code).toBe('ERR_OUTPUT_SCHEMA_INVALID');
    const read = await app.inject({ method: 'GET', url: `/v1/sessions/${sessionId}`, headers: ACME });
    expect(read.json<{ runs: number }>().runs).toBe(0);
    expect(await expectServing(app)).toEqual([]);
  });
});

describe('a run with output, on a worker', () => {
  /** A fake OpenAI-compatible server, a worker process on it, and the API in process on the same Redis. */
  async function stack(name: string) {
    const fake = await startFakeOpenAI();
    const shared = await deployment(name);
    const profiles = JSON.stringify([
      { name: 'judge', provider: 'openai', baseURL: fake.baseURL, model: 'm', apiKey: 'sk-x', maxRetries: 0 },
    ]);
    const { app } = await build({
      env: {
        TETHER_QUEUE_PREFIX: shared.prefix,
        TETHER_WORKSPACE_ROOT: shared.workspaceRoot,
        TETHER_MODEL_PROFILES: profiles,
      },
    });
    await startWorker(shared, 'worker', 2, { TETHER_MODEL_PROFILES: profiles });
    return { fake, app };
  }

  /** Submits through the API and reads the run back once it has ended. */
  async function runToEnd(app: FastifyInstance, body: object): Promise<Run> {
    const submitted = await post(app, '/v1/runs', body);
    expect(submitted.statusCode, submitted.body).toBe(202);
    const id = submitted.json<{ id: string }>().id;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
      if (['completed', 'failed', 'cancelled'].includes(run.status)) return run;
      if (Date.now() > deadline) throw new Error(`run ${id} did not end: ${run.status}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('completes with the accepted result after an invalid try; GET and run.completed show it, another tenant gets 404', async () => {
    const { fake, app } = await stack('results-ok');
    try {
      fake.enqueue(streamToolCalls([{ name: 'submit_result', arguments: '{"verdict":"maybe"}' }]));
      fake.enqueue(
        streamToolCalls([{ name: 'submit_result', arguments: '{"verdict":"pass","score":7}' }], {
          content: 'It passes.',
        }),
      );
      const run = await runToEnd(app, {
        input: 'judge the build',
        model: { profile: 'judge' },
        toolsets: ['planning'],
        output: { schema: SCHEMA },
      });
      expect(run).toMatchObject({
        status: 'completed',
        output: 'It passes.',
        result: { verdict: 'pass', score: 7 },
      });
      const completed = (await runEvents(app, run.id)).find((e) => e.type === 'run.completed') as
        | RunEvent<'run.completed'>
        | undefined;
      expect(completed?.data).toEqual({ output: 'It passes.', result: { verdict: 'pass', score: 7 } });

      // The model was offered the schema as submit_result's parameters, and told what was wrong.
      const [first, second] = fake.requests
        .filter((request) => request.path.endsWith('/chat/completions'))
        .map((request) => request.body as Record<string, unknown>);
      const offered = ((first?.tools ?? []) as { function: { name: string; parameters: unknown } }[]).find(
        (tool) => tool.function.name === 'submit_result',
      );
      expect(offered?.function.parameters).toEqual(SCHEMA);
      const told = ((second?.messages ?? []) as { role: string; content: string }[]).find(
        (m) => m.role === 'tool',
      );
      expect(told?.content).toMatch(
        /^Invalid arguments for submit_result: `verdict` must be equal to one of/,
      );

      const foreign = await app.inject({ method: 'GET', url: `/v1/runs/${run.id}`, headers: BETA });
      expect(foreign.statusCode).toBe(404);
    } finally {
      await fake.close();
    }
  });

  it('fails with ERR_OUTPUT_INVALID past output.maxAttempts (a plain-text answer counted), with no result', async () => {
    const { fake, app } = await stack('results-invalid');
    try {
      fake.enqueue(streamToolCalls([{ name: 'submit_result', arguments: '{"score":-1}' }]));
      fake.enqueue(streamText('It passes, I think.'));
      const run = await runToEnd(app, {
        input: 'judge the build',
        model: { profile: 'judge' },
        toolsets: ['planning'],
        output: { schema: SCHEMA, maxAttempts: 2 },
      });
      expect(run.status).toBe('failed');
      expect(run.error?.code).toBe('ERR_OUTPUT_INVALID');
      expect(run.error?.message).toContain('answered in plain text without calling submit_result');
      expect(run).not.toHaveProperty('result');
      expect(fake.requests).toHaveLength(2);
      // A run without output shows no result.
      const plain = await runToEnd(app, replayRun([{ content: 'done' }]));
      expect(plain).toMatchObject({ status: 'completed', output: 'done' });
      expect(plain).not.toHaveProperty('result');
    } finally {
      await fake.close();
    }
  });
});
