/**
 * A real model in one step, end to end over real ports: an API process and a
 * worker process whose only model setting is one provider's key (and the base
 * URL of a fake server speaking that provider's wire format, streaming
 * included) run a tool-calling run to completion on the default profile, for
 * Anthropic and for OpenAI. With no key at all, the API refuses a run saying
 * how to configure a model, and `tether run` prints that, not an error code.
 */
import { fileURLToPath } from 'node:url';
import type { Run, RunEvent } from '@tether/protocol';
import {
  anthropicText,
  anthropicToolUse,
  FakeAnthropicServer,
  FakeOpenAIServer,
  killAllSpawned,
  spawnNode,
  streamText,
  streamToolCalls,
} from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, ACME_KEY, API_KEYS } from './helper.js';
import { call, deployment, startApi, startWorker, stopAll } from './processes.js';

const CLI = fileURLToPath(new URL('../../../packages/client/dist/cli.js', import.meta.url));
const TERMINAL = ['completed', 'failed', 'cancelled'];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async (context) => {
  await stopAll(context);
  await killAllSpawned();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** An API and a worker with this model environment (and nothing else of a model). */
async function stack(name: string, model: Record<string, string>) {
  const env = await deployment(name);
  // One after another: each process gets the machine to itself while it starts.
  const api = await startApi(env, API_KEYS, 'api', model);
  await startWorker(env, 'worker', 1, model);
  return api;
}

/** Submits a run naming no model, and waits for its end. */
async function run(base: string, input: string): Promise<Run> {
  const submitted = await call<{ id: string }>(base, 'POST', '/v1/runs', { input, toolsets: ['base'] });
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const read = await call<Run>(base, 'GET', `/v1/runs/${submitted.body.id}`);
    if (TERMINAL.includes(read.body.status)) return read.body;
    if (Date.now() > deadline) throw new Error(`run ${submitted.body.id} did not end`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function events(base: string, id: string): Promise<RunEvent[]> {
  const page = await fetch(`${base}/v1/runs/${id}/events?limit=1000`, {
    headers: { ...ACME, accept: 'application/json' },
  });
  return ((await page.json()) as { data: RunEvent[] }).data;
}

async function file(base: string, id: string, path: string): Promise<string> {
  return (await fetch(`${base}/v1/runs/${id}/files/${path}`, { headers: ACME })).text();
}

const WRITE = JSON.stringify({ path: 'hello.txt', content: 'hello from the model\n' });

describe('a default model from one key', () => {
  it('ANTHROPIC_API_KEY alone: a tool-calling run completes on the Anthropic provider, cached', async () => {
    const fake = await new FakeAnthropicServer().start();
    cleanups.push(() => fake.close());
    const api = await stack('anthropic', {
      ANTHROPIC_API_KEY: 'sk-ant-e2e',
      ANTHROPIC_BASE_URL: fake.baseURL,
    });
    fake.enqueue(
      anthropicToolUse([{ id: 'toolu_write', name: 'write_file', input: WRITE }], { text: 'Writing it.' }),
      anthropicText('Wrote hello.txt.', {
        usage: {
          input_tokens: 30,
          output_tokens: 6,
          cache_read_input_tokens: 1_500,
          cache_creation_input_tokens: 40,
        },
      }),
    );

    const ended = await run(api.base, 'Write hello.txt');

    expect(ended).toMatchObject({ status: 'completed', output: 'Wrote hello.txt.' });
    expect(ended.model).toEqual({ profile: 'default', name: 'claude-sonnet-5-5' });
    expect(await file(api.base, ended.id, 'hello.txt')).toBe('hello from the model\n');
    const [first, second] = fake.requests.map((request) => request.body as Record<string, unknown>);
    expect(fake.requests).toHaveLength(2);
    expect(JSON.stringify(fake.requests[0]?.headers)).toContain('sk-ant-e2e');
    expect(first).toMatchObject({ model: 'claude-sonnet-5-5', stream: true });
    expect(first?.system).toEqual([
      expect.objectContaining({ type: 'text', cache_control: { type: 'ephemeral' } }),
    ]);
    expect(((first?.tools ?? []) as { name: string }[]).map((tool) => tool.name)).toContain('write_file');
    const messages = (second?.messages ?? []) as { role: string; content: Record<string, unknown>[] }[];
    expect(messages.at(-1)).toMatchObject({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_write', cache_control: { type: 'ephemeral' } }],
    });
    // The same events and usage as a run on the OpenAI provider, the cache figures added up.
    const logged = await events(api.base, ended.id);
    const types = logged.map((event) => event.type);
    expect(types).toEqual(expect.arrayContaining(['message.delta', 'tool.call', 'tool.result', 'usage']));
    expect(
      logged
        .filter((e) => e.type === 'message.delta')
        .map((e) => (e.data as { text: string }).text)
        .join(''),
    ).toBe('Writing it.Wrote hello.txt.');
    expect(ended.usage).toEqual({
      inputTokens: 11 + 1_570,
      outputTokens: 13,
      totalTokens: 11 + 1_570 + 13,
      cacheReadTokens: 1_500,
      cacheWriteTokens: 40,
    });
  });

  it('OPENAI_API_KEY alone (with OPENAI_BASE_URL): the server is asked for its model, and the run completes', async () => {
    const fake = await new FakeOpenAIServer({ models: ['served-model'] }).start();
    cleanups.push(() => fake.close());
    const api = await stack('openai', { OPENAI_API_KEY: 'sk-e2e', OPENAI_BASE_URL: fake.baseURL });
    fake.enqueue(
      streamToolCalls([{ id: 'call_write', name: 'write_file', arguments: WRITE }]),
      streamText('Wrote hello.txt.'),
    );

    const ended = await run(api.base, 'Write hello.txt');

    expect(ended).toMatchObject({ status: 'completed', output: 'Wrote hello.txt.' });
    // The model the server listed, not the profile's (it names none).
    expect(ended.model).toEqual({ profile: 'default', name: 'served-model' });
    expect(await file(api.base, ended.id, 'hello.txt')).toBe('hello from the model\n');
    expect(fake.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'GET /v1/models',
      'POST /v1/chat/completions',
      'POST /v1/chat/completions',
    ]);
    expect(fake.requests.slice(1).map((request) => (request.body as { model: string }).model)).toEqual([
      'served-model',
      'served-model',
    ]);
    expect(fake.requests[1]?.headers.authorization).toBe('Bearer sk-e2e');
  });

  it('no key: the API refuses a run naming the variables, and tether run prints that instead of an error code', async () => {
    const env = await deployment('no-model');
    const api = await startApi(env, API_KEYS);

    const refused = await call<{ error: { code: string; message: string } }>(api.base, 'POST', '/v1/runs', {
      input: 'list the files',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('ERR_MODEL_PROFILE_REQUIRED');
    for (const variable of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY']) {
      expect(refused.body.error.message).toContain(variable);
    }

    const cli = spawnNode(CLI, { NO_COLOR: '1' }, [
      'run',
      'list the files',
      '--url',
      api.base,
      '--api-key',
      ACME_KEY,
    ]);
    expect((await cli.exited).code).toBe(1);
    const said = cli.output();
    expect(said).toContain('No model is configured on this server');
    for (const variable of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY'])
      expect(said).toContain(variable);
    expect(said).not.toContain('ERR_MODEL_PROFILE_REQUIRED');
  });
});
