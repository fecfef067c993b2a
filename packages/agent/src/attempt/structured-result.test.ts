import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReplayScript, RunEventInput } from '@tether/protocol';
import { createSubmitResultTool, createTools, type Tool } from '@tether/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultAcceptedMessage, resultRequiredMessage } from '../prompt/system-prompt.js';
import type { ChatMessage, ModelProvider } from '../providers/model-provider.js';
import { createReplayProvider } from '../providers/replay-provider.js';
import { type Checkpoint, initialCheckpoint, parseCheckpoint, storedCheckpoint } from './checkpoint.js';
import { type AttemptOutcome, type AttemptParams, runAttempt } from './run-attempt.js';

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'tether-result-'));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

const SCHEMA = {
  type: 'object',
  properties: { verdict: { type: 'string', enum: ['pass', 'fail'] }, score: { type: 'integer', minimum: 0 } },
  required: ['verdict'],
  additionalProperties: false,
};

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const submit = (args: Record<string, unknown>) => call('submit_result', args);

/**
 * A replay script played against a real workspace, the run's `submit_result` among its tools, and
 * each model turn's transcript kept as the model saw it.
 */
function harness(script: ReplayScript) {
  const replay = createReplayProvider(script);
  const seen: ChatMessage[][] = [];
  const provider: ModelProvider = {
    name: 'recorded',
    complete(request) {
      seen.push(structuredClone(request.messages));
      return replay.complete(request);
    },
  };
  const events: RunEventInput[] = [];
  const saves: string[] = [];
  const checkpoint = initialCheckpoint({ systemPrompt: 'You are a test agent.', input: 'judge it' });
  const attempt = async (cp: Checkpoint, extra: Partial<AttemptParams> = {}): Promise<AttemptOutcome> => {
    const controller = new AbortController();
    const tools: Tool[] = [
      ...createTools(
        {
          runId: 'run_test',
          workspace,
          emit: (event) => events.push(event),
          signal: controller.signal,
          todos: { get: () => cp.todos, set: (items) => (cp.todos = items) },
          sandbox: 'none',
        },
        ['write_file', 'read_file'],
      ),
      createSubmitResultTool(SCHEMA),
    ];
    return runAttempt({
      checkpoint: cp,
      provider,
      tools,
      signal: controller.signal,
      emit: (event) => events.push(event),
      saveCheckpoint: async (saved) => {
        saves.push(storedCheckpoint(saved));
      },
      output: { maxAttempts: 3 },
      ...extra,
    });
  };
  return { seen, events, saves, checkpoint, attempt };
}

/** The tool results of the transcript, by call id, in order. */
function toolResults(messages: ChatMessage[]): [string, string][] {
  return messages.flatMap((m) => (m.role === 'tool' ? [[m.toolCallId, m.content] as [string, string]] : []));
}

/** Every call of the transcript has exactly one result. */
function expectPaired(messages: ChatMessage[]): void {
  const calls = messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : [])).map((c) => c.id);
  expect(toolResults(messages).map(([id]) => id)).toEqual(calls);
}

describe('runAttempt with a structured result (output)', () => {
  it('completes at a valid submit_result with its arguments as the result and the turn’s text as output', async () => {
    const h = harness([{ content: 'The build passes.', toolCalls: [submit({ verdict: 'pass', score: 9 })] }]);
    const outcome = await h.attempt(h.checkpoint);
    expect(outcome).toEqual({
      status: 'completed',
      output: 'The build passes.',
      result: { verdict: 'pass', score: 9 },
    });
    expect(toolResults(h.checkpoint.messages)).toEqual([['call_0_0', resultAcceptedMessage('en')]]);
    expect(h.checkpoint.outputAttempts).toBeUndefined();
    const ok = h.events.filter((e) => e.type === 'tool.result').map((e) => e.data);
    expect(ok).toEqual([expect.objectContaining({ name: 'submit_result', ok: true })]);
  });

  it('gives the result’s JSON as the output when the turn has no text', async () => {
    const h = harness([{ toolCalls: [submit({ verdict: 'fail' })] }]);
    expect(await h.attempt(h.checkpoint)).toEqual({
      status: 'completed',
      output: '{"verdict":"fail"}',
      result: { verdict: 'fail' },
    });
  });

  it('gives invalid arguments their validation errors and lets the model try again', async () => {
    const h = harness([
      { toolCalls: [submit({ verdict: 'maybe' })] },
      { toolCalls: [submit({ score: 3 })] },
      { toolCalls: [submit({ verdict: 'pass', score: 3 })] },
    ]);
    const outcome = await h.attempt(h.checkpoint);
    expect(outcome).toMatchObject({ status: 'completed', result: { verdict: 'pass', score: 3 } });
    const [first, second] = toolResults(h.seen[2] as ChatMessage[]).map(([, content]) => content);
    expect(first).toMatch(/^Invalid arguments for submit_result: `verdict` must be equal to one of/);
    expect(second).toContain('missing required field `verdict`');
    expect(h.checkpoint.outputAttempts).toBe(2);
  });

  it('fails with ERR_OUTPUT_INVALID at maxAttempts invalid calls, naming the last errors', async () => {
    const h = harness([
      { toolCalls: [submit({ verdict: 'maybe' })] },
      { toolCalls: [submit({ verdict: 'pass', extra: 1 })] },
      { toolCalls: [submit({ verdict: 'pass' })] },
    ]);
    const outcome = await h.attempt(h.checkpoint, { output: { maxAttempts: 2 } });
    if (outcome.status !== 'failed') throw new Error(`expected failed, got ${outcome.status}`);
    expect(outcome.error.code).toBe('ERR_OUTPUT_INVALID');
    expect(outcome.error.retryable).toBe(false);
    expect(outcome.error.message).toMatch(
      /^The run gave no valid result in 2 attempts \(output\.maxAttempts\)\./,
    );
    expect(outcome.error.message).toContain('unknown field `extra`');
    // The third turn was never asked for.
    expect(h.seen).toHaveLength(2);
    expect(parseCheckpoint(h.saves.at(-1) as string).outputAttempts).toBe(2);
  });

  it('counts a final answer in plain text as an attempt, and tells the model, as the user, to call submit_result', async () => {
    const h = harness([{ content: 'It passes.' }, { toolCalls: [submit({ verdict: 'pass' })] }]);
    const outcome = await h.attempt(h.checkpoint);
    expect(outcome).toMatchObject({ status: 'completed', result: { verdict: 'pass' } });
    expect((h.seen[1] as ChatMessage[]).slice(-2)).toEqual([
      { role: 'assistant', content: 'It passes.' },
      { role: 'user', content: resultRequiredMessage('en', 'submit_result'), reminder: true },
    ]);
    expect(h.checkpoint.outputAttempts).toBe(1);

    const once = harness([{ content: 'It passes.' }, { toolCalls: [submit({ verdict: 'pass' })] }]);
    const failed = await once.attempt(once.checkpoint, { output: { maxAttempts: 1 } });
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'ERR_OUTPUT_INVALID',
        message: expect.stringContaining('answered in plain text without calling submit_result'),
      },
    });
  });

  it('gives the calls after an accepted submit_result (and a client call set aside) a result saying they did not run', async () => {
    const h = harness([
      {
        toolCalls: [
          call('write_file', { path: 'before.txt', content: 'ran' }),
          call('get_weather', { city: 'Oslo' }),
          submit({ verdict: 'pass' }),
          call('write_file', { path: 'after.txt', content: 'never' }),
        ],
      },
    ]);
    const outcome = await h.attempt(h.checkpoint, { clientTools: [weather] });
    expect(outcome).toMatchObject({ status: 'completed', result: { verdict: 'pass' } });
    expect(await readFile(join(workspace, 'before.txt'), 'utf8')).toBe('ran');
    await expect(readFile(join(workspace, 'after.txt'), 'utf8')).rejects.toThrow();
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    expectPaired(stored.messages);
    expect(toolResults(stored.messages).map(([id, content]) => [id, content.slice(0, 40)])).toEqual([
      ['call_0_0', expect.any(String)],
      ['call_0_1', 'This get_weather call did not run: the r'],
      ['call_0_2', resultAcceptedMessage('en').slice(0, 40)],
      ['call_0_3', 'This write_file call did not run: the ru'],
    ]);
    // No client call was requested.
    expect(h.events.some((e) => e.type === 'tool.requested')).toBe(false);
  });

  it('keeps the count of failed attempts across a resume from the stored checkpoint', async () => {
    const h = harness([
      { toolCalls: [submit({ verdict: 'maybe' }), call('get_weather', { city: 'Oslo' })] },
      { toolCalls: [submit({ verdict: 'maybe' })] },
      { toolCalls: [submit({ verdict: 'pass' })] },
    ]);
    const first = await h.attempt(h.checkpoint, { clientTools: [weather], output: { maxAttempts: 2 } });
    if (first.status !== 'tool_calls') throw new Error(`expected tool_calls, got ${first.status}`);
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    expect(stored.outputAttempts).toBe(1);
    const [request] = first.calls;
    const resumed = await h.attempt(stored, {
      clientTools: [weather],
      output: { maxAttempts: 2 },
      resolutions: [{ requestId: request?.requestId ?? '', output: 'sunny', isError: false }],
    });
    // The second invalid call is the second attempt, not the first of a new count.
    expect(resumed).toMatchObject({ status: 'failed', error: { code: 'ERR_OUTPUT_INVALID' } });
    expect(stored.outputAttempts).toBe(2);
  });

  it('without output, runs submit_result as an ordinary tool and ends at a plain-text answer', async () => {
    const h = harness([{ toolCalls: [submit({ verdict: 'pass' })] }, { content: 'done' }]);
    expect(await h.attempt(h.checkpoint, { output: undefined })).toEqual({
      status: 'completed',
      output: 'done',
    });
  });
});
