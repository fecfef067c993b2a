import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReplayScript, RunEventInput } from '@tether/protocol';
import { TetherError } from '@tether/protocol';
import { startFakeOpenAI, streamText, streamToolCalls } from '@tether/testing';
import { compileApprovalPolicy, createTools, jsonSchemaArguments, type Tool } from '@tether/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clarifyFailedMessage, clarifyTimeoutMessage, escalatedToolResult } from '../prompt/system-prompt.js';
import type { ChatMessage, ModelProvider } from '../providers/model-provider.js';
import { createOpenAIProvider } from '../providers/openai-provider.js';
import { createReplayProvider } from '../providers/replay-provider.js';
import { resolveProvider } from '../providers/resolve-provider.js';
import { type Checkpoint, initialCheckpoint, parseCheckpoint } from './checkpoint.js';
import {
  type AttemptOutcome,
  type AttemptParams,
  type CrewOptions,
  crewResultContent,
  runAttempt,
  turnCost,
} from './run-attempt.js';
import { approvalsOf, type CrewResultEntry, questionOf, toolOutputsOf } from './waitpoint.js';

let workspace: string;

beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'tether-attempt-'));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

const DEFAULT_TOOLS = ['bash', 'read_file', 'write_file', 'list_dir', 'patch', 'todo', 'clarify'];

/** Everything one attempt needs, against a real workspace, with saved checkpoints kept as JSON. */
function harness(
  provider: ModelProvider,
  options: { controller?: AbortController; toolNames?: readonly string[] } = {},
) {
  const events: RunEventInput[] = [];
  const saves: string[] = [];
  const controller = options.controller ?? new AbortController();
  const checkpoint = initialCheckpoint({ systemPrompt: 'You are a test agent.', input: 'do the task' });
  const toolsFor = (cp: Checkpoint): Tool[] =>
    createTools(
      {
        runId: 'run_test',
        workspace,
        emit: (event) => events.push(event),
        signal: controller.signal,
        todos: { get: () => cp.todos, set: (items) => (cp.todos = items) },
        sandbox: 'none',
      },
      options.toolNames ?? DEFAULT_TOOLS,
    );
  const attempt = async (cp: Checkpoint, extra: Partial<AttemptParams> = {}): Promise<AttemptOutcome> => {
    const tools = toolsFor(cp);
    try {
      return await runAttempt({
        checkpoint: cp,
        provider,
        tools,
        signal: controller.signal,
        emit: (event) => events.push(event),
        saveCheckpoint: async (saved) => {
          saves.push(JSON.stringify(saved));
        },
        interaction: 'suspend',
        ...extra,
      });
    } finally {
      // As the worker does after an attempt: bash's prepared sandbox (processes, cgroup) goes.
      await Promise.all(tools.map((tool) => tool.close?.()));
    }
  };
  return { events, saves, checkpoint, attempt, controller };
}

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
/** A replay provider that keeps the transcript each model turn was given, as the model saw it. */
function recorded(script: ReplayScript) {
  const replay = createReplayProvider(script);
  const seen: ChatMessage[][] = [];
  const provider: ModelProvider = {
    name: 'recorded',
    complete(request) {
      seen.push(structuredClone(request.messages));
      return replay.complete(request);
    },
  };
  return { provider, seen };
}
/** The result the transcript holds for the first call named `name`. */
function resultOf(messages: ChatMessage[], name: string) {
  const callId = messages
    .flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))
    .find((c) => c.name === name)?.id;
  return messages.find((m) => m.role === 'tool' && m.toolCallId === callId)?.content;
}
const types = (events: RunEventInput[]) => events.map((e) => e.type);

describe('runAttempt', () => {
  it('runs tool calls in order and completes with the final text', async () => {
    const script: ReplayScript = [
      {
        toolCalls: [
          call('write_file', { path: 'a.txt', content: 'hello\n' }),
          call('read_file', { path: 'a.txt' }),
        ],
      },
      { content: 'done' },
    ];
    const h = harness(createReplayProvider(script));
    const outcome = await h.attempt(h.checkpoint);
    expect(outcome).toEqual({ status: 'completed', output: 'done' });
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).toBe('hello\n');
    expect(types(h.events).filter((t) => t !== 'message.delta' && t !== 'usage')).toEqual([
      'message',
      'tool.call',
      'tool.result',
      'tool.call',
      'tool.result',
      'message',
    ]);
    // A save after the first turn and after each tool result; the final turn is the caller's to store.
    expect(h.saves).toHaveLength(3);
    expect(h.checkpoint.step).toBe(2);
    expect(h.checkpoint.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'done' });
    expect(parseCheckpoint(h.saves.at(-1) as string).messages.at(-1)).toMatchObject({ role: 'tool' });
    // Each save says which model answered: the record shows it.
    expect(parseCheckpoint(h.saves[0] as string).model).toEqual({ profile: 'replay', name: 'replay' });
  });

  it('records the model that answered each turn: the response says, else the provider, else its name', async () => {
    const replay = createReplayProvider([{ toolCalls: [call('todo', { todos: [] })] }, { content: 'done' }]);
    const answers = ['listed-model', undefined];
    const provider: ModelProvider = {
      name: 'local',
      async complete(request) {
        return { ...(await replay.complete(request)), model: answers.shift() };
      },
    };
    const h = harness(provider);
    await h.attempt(h.checkpoint);
    expect(parseCheckpoint(h.saves[0] as string).model).toEqual({ profile: 'local', name: 'listed-model' });
    expect(h.checkpoint.model).toEqual({ profile: 'local', name: 'local' });
  });

  it('suspends at a clarify in the middle of a turn, then resumes with the answer and runs the rest', async () => {
    const script: ReplayScript = [
      {
        toolCalls: [
          call('write_file', { path: 'first.txt', content: '1' }),
          call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] }),
          call('bash', { command: 'echo -n third >> third.txt' }),
        ],
      },
      { content: 'finished' },
    ];
    const h = harness(createReplayProvider(script));
    const first = await h.attempt(h.checkpoint);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(first.clarify).toMatchObject({ question: 'Which colour?', choices: ['red', 'blue'] });
    expect(first.clarify.requestId).toMatch(/^clr_[0-9a-z]{26}$/);
    expect(await readFile(join(workspace, 'first.txt'), 'utf8')).toBe('1');
    await expect(readFile(join(workspace, 'third.txt'), 'utf8')).rejects.toThrow();
    // The host appends `clarify.requested` when it stores the question; the attempt emits no lifecycle event.
    expect(h.events.some((e) => e.type === 'clarify.requested' || e.type === 'attempt.started')).toBe(false);

    // Resume from the stored checkpoint, as another worker would.
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    expect(questionOf(stored.waitpoint)?.requestId).toBe(first.clarify.requestId);
    const resumed = await h.attempt(stored, {
      resolutions: [{ requestId: first.clarify.requestId, answer: 'blue' }],
    });
    expect(resumed).toEqual({ status: 'completed', output: 'finished' });
    const clarifyResult = stored.messages.find(
      (m) => m.role === 'tool' && m.toolCallId === first.clarify.callId,
    );
    expect(clarifyResult).toMatchObject({ content: 'blue' });
    expect(await readFile(join(workspace, 'first.txt'), 'utf8')).toBe('1');
    expect(await readFile(join(workspace, 'third.txt'), 'utf8')).toBe('third');
    expect(stored.waitpoint).toBeUndefined();
  });

  it('resumes after the deadline with the timeout message in the run locale', async () => {
    const script: ReplayScript = [
      { toolCalls: [call('clarify', { question: '继续吗？' })] },
      { content: '好的' },
    ];
    const h = harness(createReplayProvider(script));
    const first = await h.attempt(h.checkpoint, { locale: 'zh' });
    if (first.status !== 'suspended') throw new Error(`expected suspended, got ${first.status}`);
    const resumed = await h.attempt(h.checkpoint, {
      locale: 'zh',
      resolutions: [{ requestId: first.clarify.requestId, timedOut: true }],
    });
    expect(resumed).toEqual({ status: 'completed', output: '好的' });
    const tool = h.checkpoint.messages.find((m) => m.role === 'tool');
    expect(tool?.content).toBe('用户未在规定时间内回答。请根据已有信息自行判断并继续执行。');
  });

  it('refuses to resume a suspended checkpoint without the answer to its own request', async () => {
    const h = harness(
      createReplayProvider([{ toolCalls: [call('clarify', { question: 'ok?' })] }, { content: 'x' }]),
    );
    const first = await h.attempt(h.checkpoint);
    expect(first.status).toBe('suspended');
    const again = await h.attempt(h.checkpoint, { resolutions: [{ requestId: 'clr_other', answer: 'yes' }] });
    expect(again.status).toBe('failed');
    if (again.status === 'failed') expect(again.error.code).toBe('ERR_AGENT_INTERNAL');
  });

  it('with interaction "return", completes with the question as its output', async () => {
    const script: ReplayScript = [
      { toolCalls: [call('clarify', { question: 'Which file?', choices: ['a', 'b'] })] },
    ];
    const h = harness(createReplayProvider(script));
    const outcome = await h.attempt(h.checkpoint, { interaction: 'return' });
    expect(outcome.status).toBe('completed');
    if (outcome.status === 'completed') expect(outcome.output).toContain('Which file?');
    expect(h.events.some((e) => e.type === 'clarify.requested')).toBe(false);
  });

  describe('with onClarifyRequest (in process)', () => {
    it("awaits the answer and gives it to the model as clarify's result, without suspending", async () => {
      const { provider, seen } = recorded([
        {
          toolCalls: [
            call('write_file', { path: 'first.txt', content: '1' }),
            call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] }),
            call('write_file', { path: 'third.txt', content: '3' }),
          ],
        },
        { content: 'painted it blue' },
      ]);
      const h = harness(provider);
      const asked: Array<{ question: string; choices: string[]; firstWritten: boolean }> = [];
      const outcome = await h.attempt(h.checkpoint, {
        // Overridden: a host with an in-process answer never suspends nor returns the question.
        interaction: 'return',
        onClarifyRequest: async (question, choices) => {
          const firstWritten = await readFile(join(workspace, 'first.txt'), 'utf8').then(
            () => true,
            () => false,
          );
          asked.push({ question, choices, firstWritten });
          return 'blue';
        },
      });
      expect(outcome).toEqual({ status: 'completed', output: 'painted it blue' });
      expect(asked).toEqual([{ question: 'Which colour?', choices: ['red', 'blue'], firstWritten: true }]);
      // The model's second turn saw the answer as the clarify call's result.
      expect(seen).toHaveLength(2);
      expect(resultOf(seen[1] as ChatMessage[], 'clarify')).toBe('blue');
      expect(await readFile(join(workspace, 'third.txt'), 'utf8')).toBe('3');
      expect(h.checkpoint.waitpoint).toBeUndefined();
      const clarifyEvents = h.events.filter(
        (e) => (e.type === 'tool.call' || e.type === 'tool.result') && e.data.name === 'clarify',
      );
      expect(clarifyEvents.map((e) => e.type)).toEqual(['tool.call', 'tool.result']);
      expect(clarifyEvents[1]?.data).toMatchObject({ ok: true, content: 'blue' });
      // Saved after the first turn and after each of the three results, the answer included.
      expect(h.saves).toHaveLength(4);
      expect(resultOf(parseCheckpoint(h.saves[2] as string).messages, 'clarify')).toBe('blue');
    });

    it('passes no choices as an empty list', async () => {
      const h = harness(
        createReplayProvider([{ toolCalls: [call('clarify', { question: 'Name?' })] }, { content: 'ok' }]),
      );
      const got: string[][] = [];
      await h.attempt(h.checkpoint, {
        onClarifyRequest: async (_question, choices) => {
          got.push(choices);
          return 'Ada';
        },
      });
      expect(got).toEqual([[]]);
    });

    it('past clarifyTimeoutMs gives the timeout message in the run locale and goes on', async () => {
      const { provider, seen } = recorded([
        { toolCalls: [call('clarify', { question: '继续吗？' })] },
        { content: '好的' },
      ]);
      const h = harness(provider);
      let handlerSignal: AbortSignal | undefined;
      const outcome = await h.attempt(h.checkpoint, {
        locale: 'zh',
        clarifyTimeoutMs: 50,
        onClarifyRequest: (_question, _choices, { signal }) => {
          handlerSignal = signal;
          return new Promise<string>(() => {});
        },
      });
      expect(outcome).toEqual({ status: 'completed', output: '好的' });
      expect(resultOf(seen[1] as ChatMessage[], 'clarify')).toBe(clarifyTimeoutMessage('zh'));
      // The handler is told its answer is no longer wanted.
      expect(handlerSignal?.aborted).toBe(true);
      expect(handlerSignal?.reason).toMatchObject({ name: 'TimeoutError' });
    });

    it.each([
      {
        how: 'rejects',
        handler: async () => Promise.reject(new Error('terminal closed')),
        reason: 'terminal closed',
      },
      {
        how: 'throws',
        handler: () => {
          throw new Error('no terminal');
        },
        reason: 'no terminal',
      },
      {
        how: 'gives no text',
        handler: async () => undefined as unknown as string,
        reason: 'onClarifyRequest gave undefined, not a string',
      },
    ])(
      'when the handler $how, tells the model the question could not be answered and why, and goes on',
      async ({ handler, reason }) => {
        const { provider, seen } = recorded([
          { toolCalls: [call('clarify', { question: 'Which file?' })] },
          { content: 'picked one myself' },
        ]);
        const h = harness(provider);
        const outcome = await h.attempt(h.checkpoint, { onClarifyRequest: handler });
        expect(outcome).toEqual({ status: 'completed', output: 'picked one myself' });
        const expected = clarifyFailedMessage('en', reason);
        expect(resultOf(seen[1] as ChatMessage[], 'clarify')).toBe(expected);
        const result = h.events.find((e) => e.type === 'tool.result');
        expect(result?.data).toMatchObject({ name: 'clarify', ok: false, content: expected });
      },
    );

    it.each([
      { stoppedBy: 'the host (shutdown, lost lock)', interrupted: true },
      { stoppedBy: 'the user (cancel)', interrupted: false },
    ])('an abort while waiting, by $stoppedBy, ends the attempt cancelled', async ({ interrupted }) => {
      const { provider, seen } = recorded([
        { toolCalls: [call('clarify', { question: 'ok?' })] },
        { content: 'never' },
      ]);
      const h = harness(provider);
      let handlerSignal: AbortSignal | undefined;
      let onAsked: () => void = () => {};
      const asked = new Promise<void>((resolve) => {
        onAsked = resolve;
      });
      const running = h.attempt(h.checkpoint, {
        interrupted: () => interrupted,
        clarifyTimeoutMs: 60_000,
        onClarifyRequest: (_question, _choices, { signal }) => {
          handlerSignal = signal;
          onAsked();
          return new Promise<string>(() => {});
        },
      });
      await asked;
      h.controller.abort();
      expect(await running).toEqual({ status: 'cancelled' });
      expect(handlerSignal?.aborted).toBe(true);
      expect(seen).toHaveLength(1);
      const results = h.checkpoint.messages.filter((m) => m.role === 'tool');
      if (interrupted) {
        // Unanswered: the next owner asks again.
        expect(results).toEqual([]);
      } else {
        expect(results).toHaveLength(1);
        expect(results[0]?.content).toContain('cancelled');
      }
    });

    it("gives invalid clarify arguments back to the model as the tool's validation error, asking no one", async () => {
      const { provider, seen } = recorded([
        { toolCalls: [call('clarify', { question: '', choices: ['a', 'b', 'c', 'd', 'e'] })] },
        { content: 'ok' },
      ]);
      const h = harness(provider);
      let asked = 0;
      const outcome = await h.attempt(h.checkpoint, {
        onClarifyRequest: async () => {
          asked++;
          return 'x';
        },
      });
      expect(outcome).toEqual({ status: 'completed', output: 'ok' });
      expect(asked).toBe(0);
      const result = h.events.find((e) => e.type === 'tool.result');
      expect(result?.data).toMatchObject({ name: 'clarify', ok: false });
      expect(resultOf(seen[1] as ChatMessage[], 'clarify')).toMatch(/question|choices/);
    });

    it('does not count the wait for the answer as active time', async () => {
      let t = 0;
      const h = harness(
        createReplayProvider([{ toolCalls: [call('clarify', { question: 'ok?' })] }, { content: 'done' }]),
      );
      const outcome = await h.attempt(h.checkpoint, {
        now: () => t,
        limits: { wallClockMs: 60_000 },
        clarifyTimeoutMs: 60_000,
        onClarifyRequest: async () => {
          t += 10 * 60_000; // a human thinks for ten minutes
          return 'yes';
        },
      });
      expect(outcome).toEqual({ status: 'completed', output: 'done' });
      expect(h.checkpoint.activeMs).toBe(0);
    });
  });

  it('after a crash between two tool calls, resumes without repeating the first', async () => {
    const script: ReplayScript = [
      {
        toolCalls: [
          call('bash', { command: 'echo once >> side-effect.txt' }),
          call('bash', { command: 'echo second >> second.txt' }),
        ],
      },
      { content: 'all done' },
    ];
    const provider = createReplayProvider(script);
    const h = harness(provider);
    // The "worker" dies right after the first tool result is saved.
    let saves = 0;
    const crashed = await h.attempt(h.checkpoint, {
      saveCheckpoint: async (cp) => {
        h.saves.push(JSON.stringify(cp));
        saves++;
        if (saves === 2) throw new Error('worker killed');
      },
    });
    expect(crashed.status).toBe('failed');
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    const resumed = await h.attempt(stored);
    expect(resumed).toEqual({ status: 'completed', output: 'all done' });
    expect(await readFile(join(workspace, 'side-effect.txt'), 'utf8')).toBe('once\n');
    expect(await readFile(join(workspace, 'second.txt'), 'utf8')).toBe('second\n');
  });

  it('gives unknown tools and malformed arguments back to the model as tool errors', async () => {
    const provider: ModelProvider = {
      name: 'scripted',
      async complete(request) {
        const turn = request.messages.filter((m) => m.role === 'assistant').length;
        const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
        if (turn === 0) {
          return {
            content: '',
            finishReason: 'tool_calls',
            usage,
            toolCalls: [
              { id: 'c1', name: 'nope', arguments: '{}' },
              { id: 'c2', name: 'read_file', arguments: '{"path": ' },
            ],
          };
        }
        return { content: 'recovered', finishReason: 'stop', usage, toolCalls: [] };
      },
    };
    const h = harness(provider);
    expect(await h.attempt(h.checkpoint)).toEqual({ status: 'completed', output: 'recovered' });
    const results = h.events.filter((e) => e.type === 'tool.result').map((e) => e.data);
    expect(results).toHaveLength(2);
    expect(results[0]).toMatchObject({ callId: 'c1', ok: false });
    expect((results[0] as { content: string }).content).toContain('no tool named "nope"');
    expect(results[1]).toMatchObject({ callId: 'c2', ok: false });
    expect((results[1] as { content: string }).content).toContain('not valid JSON');
  });

  it('adds up the usage of its turns, the cache figures from the first turn that reports them', async () => {
    const turns = [
      { inputTokens: 100, outputTokens: 10, totalTokens: 110 },
      { inputTokens: 120, outputTokens: 5, totalTokens: 125, cacheReadTokens: 90, cacheWriteTokens: 30 },
      { inputTokens: 130, outputTokens: 7, totalTokens: 137, cacheReadTokens: 120 },
    ];
    const provider: ModelProvider = {
      name: 'scripted',
      async complete(request) {
        const turn = request.messages.filter((m) => m.role === 'assistant').length;
        const usage = turns[turn] as (typeof turns)[number];
        if (turn < 2) {
          const toolCalls = [{ id: `c${turn}`, name: 'list_dir', arguments: '{"path":"."}' }];
          return { content: '', finishReason: 'tool_calls', usage, toolCalls };
        }
        return { content: 'done', finishReason: 'stop', usage, toolCalls: [] };
      },
    };
    const h = harness(provider);
    expect(await h.attempt(h.checkpoint)).toEqual({ status: 'completed', output: 'done' });
    const usages = h.events.filter((e) => e.type === 'usage').map((e) => e.data);
    expect(usages).toEqual([
      { inputTokens: 100, outputTokens: 10, totalTokens: 110 },
      { inputTokens: 220, outputTokens: 15, totalTokens: 235, cacheReadTokens: 90, cacheWriteTokens: 30 },
      { inputTokens: 350, outputTokens: 22, totalTokens: 372, cacheReadTokens: 210, cacheWriteTokens: 30 },
    ]);
  });

  it('tells onToolCall of each run of a tool and its result; not of an unknown name nor of a clarify suspension', async () => {
    const provider = createReplayProvider([
      {
        toolCalls: [
          call('write_file', { path: 'a.txt', content: 'a' }),
          call('read_file', { path: 'missing.txt' }),
          call('nope', {}),
          call('clarify', { question: 'Which one?' }),
        ],
      },
      { content: 'done' },
    ]);
    const h = harness(provider);
    const told: string[] = [];
    const outcome = await h.attempt(h.checkpoint, {
      onToolCall: (name) => {
        told.push(`start ${name}`);
        return (result) => told.push(`end ${name} ${result.ok ? 'ok' : result.code}`);
      },
    });
    expect(outcome.status).toBe('suspended');
    expect(told).toEqual([
      'start write_file',
      'end write_file ok',
      'start read_file',
      expect.stringMatching(/^end read_file ERR_TOOL_/),
    ]);
  });

  it('ends at each limit with its own error code', async () => {
    const loop: ReplayScript = Array.from({ length: 10 }, () => ({
      toolCalls: [call('list_dir', { path: '.' })],
    }));
    const steps = harness(createReplayProvider(loop));
    const bySteps = await steps.attempt(steps.checkpoint, { limits: { maxSteps: 3 } });
    expect(bySteps.status === 'failed' && bySteps.error.code).toBe('ERR_AGENT_MAX_STEPS');

    const tokens = harness(createReplayProvider(loop));
    tokens.checkpoint.usage.outputTokens = 500;
    const byTokens = await tokens.attempt(tokens.checkpoint, { limits: { maxOutputTokens: 500 } });
    expect(byTokens.status === 'failed' && byTokens.error.code).toBe('ERR_AGENT_MAX_OUTPUT_TOKENS');

    const clock = harness(createReplayProvider(loop));
    let t = 0;
    const byClock = await clock.attempt(clock.checkpoint, {
      limits: { wallClockMs: 1_000 },
      now: () => {
        t += 400;
        return t;
      },
    });
    expect(byClock.status === 'failed' && byClock.error.code).toBe('ERR_AGENT_WALL_CLOCK');
  });

  it('cuts oversized tool results in the transcript and says so', async () => {
    await writeFile(join(workspace, 'big.txt'), `${'x'.repeat(5_000)}\n`);
    const script: ReplayScript = [
      { toolCalls: [call('bash', { command: 'cat big.txt' })] },
      { content: 'ok' },
    ];
    const h = harness(createReplayProvider(script));
    await h.attempt(h.checkpoint, { limits: { maxToolResultChars: 1_000 } });
    const tool = h.checkpoint.messages.find((m) => m.role === 'tool');
    expect(tool?.content.length).toBeLessThanOrEqual(1_100);
    expect(tool?.content).toContain('characters cut');
  });

  it('is cancelled promptly while a long bash command runs, and the command dies', async () => {
    const script: ReplayScript = [
      { toolCalls: [call('bash', { command: 'echo $$ > pid.txt; sleep 30; echo late > late.txt' })] },
      { content: 'never' },
    ];
    const h = harness(createReplayProvider(script));
    const running = h.attempt(h.checkpoint);
    // Abort once the command has started (its pid file appears).
    await waitFor(
      async () => (await readFile(join(workspace, 'pid.txt'), 'utf8').catch(() => '')).trim() !== '',
    );
    const started = Date.now();
    h.controller.abort();
    const outcome = await running;
    expect(outcome.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = Number((await readFile(join(workspace, 'pid.txt'), 'utf8')).trim());
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it.each([
    { stoppedBy: 'the host (shutdown, lost lock)', interrupted: true },
    { stoppedBy: 'the user (cancel)', interrupted: false },
  ])(
    'a call stopped by $stoppedBy leaves the checkpoint as a crash would, or records Cancelled',
    async ({ interrupted }) => {
      const script: ReplayScript = [
        { toolCalls: [call('bash', { command: 'echo started > started.txt; sleep 30' })] },
        { content: 'never' },
      ];
      const h = harness(createReplayProvider(script));
      const running = h.attempt(h.checkpoint, { interrupted: () => interrupted });
      await waitFor(
        async () => (await readFile(join(workspace, 'started.txt'), 'utf8').catch(() => '')) !== '',
      );
      h.controller.abort();
      expect((await running).status).toBe('cancelled');
      const results = h.checkpoint.messages.filter((m) => m.role === 'tool');
      if (interrupted) {
        // Unanswered: the next owner runs the call again.
        expect(results).toEqual([]);
        expect(h.events.some((e) => e.type === 'tool.result')).toBe(false);
      } else {
        expect(results).toHaveLength(1);
        expect(results[0]?.content).toContain('Cancelled');
      }
    },
  );

  it('is cancelled promptly during a model stream', async () => {
    const server = await startFakeOpenAI();
    try {
      server.enqueue({ kind: 'hang' });
      const provider = createOpenAIProvider({
        baseURL: server.baseURL,
        model: 'm',
        timeoutMs: 30_000,
        maxRetries: 0,
      });
      const h = harness(provider);
      const running = h.attempt(h.checkpoint);
      await server.waitForRequests(1);
      const started = Date.now();
      h.controller.abort();
      expect(await running).toEqual({ status: 'cancelled' });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await server.close();
    }
  });

  it('streams text deltas from a real OpenAI-compatible server', async () => {
    const server = await startFakeOpenAI();
    try {
      server.enqueue(streamText('Hello', { pieces: 2 }));
      const provider = createOpenAIProvider({
        baseURL: server.baseURL,
        model: 'm',
        timeoutMs: 5_000,
        maxRetries: 0,
      });
      const h = harness(provider);
      expect(await h.attempt(h.checkpoint)).toEqual({ status: 'completed', output: 'Hello' });
      const deltas = h.events
        .filter((e) => e.type === 'message.delta')
        .map((e) => (e.data as { text: string }).text);
      expect(deltas.join('')).toBe('Hello');
    } finally {
      await server.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in time');
}

const CREW_TOOLS = [
  ...DEFAULT_TOOLS.filter((name) => name !== 'clarify'),
  'delegate_task',
  'delegate_parallel',
  'escalate',
];

/** Crew options whose child ids count up, recording every id handed out. */
function crewOptions(overrides: Partial<CrewOptions> = {}) {
  const ids: string[] = [];
  const crew: CrewOptions = {
    maxParallel: 5,
    remainingChildren: 50,
    newChildId: () => {
      const id = `run_child_${ids.length}`;
      ids.push(id);
      return id;
    },
    ...overrides,
  };
  return { crew, ids };
}

function entry(
  index: number,
  runId: string,
  summary: string,
  status: CrewResultEntry['status'] = 'completed',
) {
  return {
    index,
    runId,
    status,
    summary,
    usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    durationMs: 1_000 + index,
  };
}

describe('runAttempt with crew tools', () => {
  const delegateThenTodo: ReplayScript = [
    {
      toolCalls: [
        call('delegate_parallel', {
          tasks: [
            { goal: 'Write docs/a.md', context: 'The API is in src/api.ts.' },
            { goal: 'Write docs/b.md', toolsets: ['base'] },
          ],
        }),
        call('todo', { todos: [{ id: '1', content: 'review the docs', status: 'in_progress' }] }),
      ],
    },
    { content: 'both documented' },
  ];

  it('ends the attempt delegating, the tasks saved in order with their child ids, before the next call runs', async () => {
    const h = harness(createReplayProvider(delegateThenTodo), { toolNames: CREW_TOOLS });
    const { crew, ids } = crewOptions();
    const outcome = await h.attempt(h.checkpoint, { crew });
    const delegation = {
      callId: expect.any(String),
      name: 'delegate_parallel',
      tasks: [
        { goal: 'Write docs/a.md', context: 'The API is in src/api.ts.', childRunId: 'run_child_0' },
        { goal: 'Write docs/b.md', toolsets: ['base'], childRunId: 'run_child_1' },
      ],
    };
    expect(outcome).toEqual({ status: 'delegating', delegation });
    expect(ids).toEqual(['run_child_0', 'run_child_1']);
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    const waitpoint = { requests: [{ kind: 'children', requestId: delegation.callId, ...delegation }] };
    expect(stored.waitpoint).toEqual(waitpoint);
    expect(h.checkpoint.waitpoint).toEqual(waitpoint);
    // The call is announced, but has no result yet; the todo after it waits for the resume.
    const toolEvents = h.events.filter((e) => e.type === 'tool.call' || e.type === 'tool.result');
    expect(toolEvents.map((e) => [e.type, e.data.name])).toEqual([['tool.call', 'delegate_parallel']]);
    expect(stored.todos).toEqual([]);
    expect(stored.messages.filter((m) => m.role === 'tool')).toEqual([]);
  });

  it('resumes with the results as JSON in task order, then runs the rest of the turn', async () => {
    const { provider, seen } = recorded(delegateThenTodo);
    const h = harness(provider, { toolNames: CREW_TOOLS });
    const first = await h.attempt(h.checkpoint, { crew: crewOptions().crew });
    if (first.status !== 'delegating') throw new Error(`expected delegating, got ${first.status}`);
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    const results = [
      entry(1, 'run_child_1', 'b failed: no such file', 'failed'),
      entry(0, 'run_child_0', 'Wrote docs/a.md.'),
    ];
    const resumed = await h.attempt(stored, {
      crew: crewOptions().crew,
      resolutions: [{ requestId: first.delegation.callId, results }],
    });
    expect(resumed).toEqual({ status: 'completed', output: 'both documented' });
    const content = resultOf(seen[1] as ChatMessage[], 'delegate_parallel');
    expect(JSON.parse(content ?? '')).toEqual([results[1], results[0]]);
    expect(content).toBe(JSON.stringify([results[1], results[0]]));
    // The todo of the same turn ran after the delegation's result.
    expect(stored.todos).toEqual([{ id: '1', content: 'review the docs', status: 'in_progress' }]);
    const ownTools = stored.messages.filter((m) => m.role === 'tool');
    expect(ownTools).toHaveLength(2);
    expect(ownTools[0]?.content).toBe(content);
    expect(stored.waitpoint).toBeUndefined();
    const result = h.events.find((e) => e.type === 'tool.result' && e.data.name === 'delegate_parallel');
    expect(result?.data).toMatchObject({ ok: true, content });
    // Saved with the result and without the pending delegation before the todo ran.
    const afterResume = h.saves
      .map((saved) => parseCheckpoint(saved))
      .find((cp) => cp.messages.some((m) => m.role === 'tool'));
    expect(afterResume?.waitpoint).toBeUndefined();
    expect(afterResume?.todos).toEqual([]);
  });

  it('delegates one task for delegate_task', async () => {
    const h = harness(
      createReplayProvider([
        { toolCalls: [call('delegate_task', { goal: 'Count the lines' })] },
        { content: 'x' },
      ]),
      { toolNames: CREW_TOOLS },
    );
    const outcome = await h.attempt(h.checkpoint, { crew: crewOptions().crew });
    expect(outcome).toMatchObject({
      status: 'delegating',
      delegation: { name: 'delegate_task', tasks: [{ goal: 'Count the lines', childRunId: 'run_child_0' }] },
    });
  });

  it.each([
    { case: 'no results', results: undefined, callId: undefined },
    { case: 'the results of another call', results: [], callId: 'call_other' },
    { case: 'a missing child', results: [entry(0, 'run_child_0', 'ok')], callId: 'same' },
    {
      case: 'a child twice',
      results: [entry(0, 'run_child_0', 'ok'), entry(1, 'run_child_0', 'ok')],
      callId: 'same',
    },
    {
      case: 'a stranger',
      results: [entry(0, 'run_child_0', 'ok'), entry(1, 'run_child_1', 'ok'), entry(2, 'run_x', 'ok')],
      callId: 'same',
    },
  ])('refuses to resume a delegation with $case', async ({ results, callId }) => {
    const h = harness(createReplayProvider(delegateThenTodo), { toolNames: CREW_TOOLS });
    const first = await h.attempt(h.checkpoint, { crew: crewOptions().crew });
    if (first.status !== 'delegating') throw new Error(`expected delegating, got ${first.status}`);
    const again = await h.attempt(h.checkpoint, {
      crew: crewOptions().crew,
      ...(results
        ? {
            resolutions: [
              {
                requestId: callId === 'same' ? first.delegation.callId : (callId as string),
                results,
              },
            ],
          }
        : {}),
    });
    expect(again.status === 'failed' && again.error.code).toBe('ERR_AGENT_INTERNAL');
    expect(h.checkpoint.messages.filter((m) => m.role === 'tool')).toEqual([]);
  });

  it.each([
    {
      case: 'more tasks than one delegation holds',
      crew: { maxParallel: 2 },
      tasks: 3,
      message:
        /given 3 tasks, but one delegation holds at most 2\. Nothing was started\. Split the tasks into batches of at most 2/,
    },
    {
      case: "more tasks than the run's life allows",
      crew: { remainingChildren: 2 },
      tasks: 3,
      message: /may start only 2 more sub-agents over its life .* asks for 3\. Nothing was started\./,
    },
    {
      case: "a run that has used up its life's children",
      crew: { remainingChildren: 0 },
      tasks: 1,
      message: /has started as many sub-agents as one run may over its life/,
    },
    {
      case: "the host's last check",
      crew: {
        refuse: (tasks: { goal: string }[]) =>
          `No replay script for the goal ${JSON.stringify(tasks[2]?.goal)}.`,
      },
      tasks: 3,
      message: /^No replay script for the goal "task 2"\.$/,
    },
  ])(
    'refuses $case with a message, starts nothing, and goes on',
    async ({ crew: overrides, tasks, message }) => {
      const { provider, seen } = recorded([
        {
          toolCalls: [
            call('delegate_parallel', {
              tasks: Array.from({ length: tasks }, (_, i) => ({ goal: `task ${i}` })),
            }),
          ],
        },
        { content: 'did it myself' },
      ]);
      const h = harness(provider, { toolNames: CREW_TOOLS });
      const { crew, ids } = crewOptions(overrides);
      expect(await h.attempt(h.checkpoint, { crew })).toEqual({
        status: 'completed',
        output: 'did it myself',
      });
      expect(ids).toEqual([]);
      expect(h.checkpoint.waitpoint).toBeUndefined();
      expect(resultOf(seen[1] as ChatMessage[], 'delegate_parallel')).toMatch(message);
      const result = h.events.find((e) => e.type === 'tool.result');
      expect(result?.data).toMatchObject({ name: 'delegate_parallel', ok: false });
      expect(types(h.events).filter((t) => t === 'tool.call')).toHaveLength(1);
    },
  );

  it("gives invalid delegate arguments back as the tool's validation error", async () => {
    const { provider, seen } = recorded([
      {
        toolCalls: [
          call('delegate_parallel', { tasks: [] }),
          call('delegate_task', { goal: 'x', files: [] }),
        ],
      },
      { content: 'ok' },
    ]);
    const h = harness(provider, { toolNames: CREW_TOOLS });
    const { crew, ids } = crewOptions();
    expect(await h.attempt(h.checkpoint, { crew })).toEqual({ status: 'completed', output: 'ok' });
    expect(ids).toEqual([]);
    expect(resultOf(seen[1] as ChatMessage[], 'delegate_parallel')).toMatch(
      /^Invalid arguments for delegate_parallel: `tasks`/,
    );
    expect(resultOf(seen[1] as ChatMessage[], 'delegate_task')).toContain('unknown field `files`');
  });

  it('without crew, runs the delegate tools as tools, which say the host cannot delegate', async () => {
    const { provider, seen } = recorded([
      { toolCalls: [call('delegate_task', { goal: 'Count the lines' })] },
      { content: 'counted them myself' },
    ]);
    const h = harness(provider, { toolNames: CREW_TOOLS });
    expect(await h.attempt(h.checkpoint)).toEqual({ status: 'completed', output: 'counted them myself' });
    expect(resultOf(seen[1] as ChatMessage[], 'delegate_task')).toContain('not available in this host');
  });

  it('ends the run at escalate with its reason as the output, leaving the calls after it', async () => {
    const h = harness(
      createReplayProvider([
        {
          toolCalls: [
            call('write_file', { path: 'notes.txt', content: 'found' }),
            call('escalate', { reason: 'The spec asks for two incompatible formats.' }),
            call('write_file', { path: 'after.txt', content: 'never' }),
          ],
        },
        { content: 'never' },
      ]),
      { toolNames: CREW_TOOLS },
    );
    const outcome = await h.attempt(h.checkpoint, { locale: 'zh' });
    expect(outcome).toEqual({
      status: 'completed',
      output: 'The spec asks for two incompatible formats.',
      escalated: true,
    });
    expect(await readFile(join(workspace, 'notes.txt'), 'utf8')).toBe('found');
    await expect(readFile(join(workspace, 'after.txt'), 'utf8')).rejects.toThrow();
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    expect(resultOf(stored.messages, 'escalate')).toBe(escalatedToolResult('zh'));
    const escalated = h.events.filter(
      (e) => (e.type === 'tool.call' || e.type === 'tool.result') && e.data.name === 'escalate',
    );
    expect(escalated.map((e) => e.type)).toEqual(['tool.call', 'tool.result']);
    expect(h.checkpoint.step).toBe(1);
  });

  it('gives an escalate with invalid arguments its validation error and goes on', async () => {
    const { provider, seen } = recorded([
      { toolCalls: [call('escalate', { reason: '' })] },
      { content: 'carried on' },
    ]);
    const h = harness(provider, { toolNames: CREW_TOOLS });
    expect(await h.attempt(h.checkpoint)).toEqual({ status: 'completed', output: 'carried on' });
    expect(resultOf(seen[1] as ChatMessage[], 'escalate')).toMatch(
      /^Invalid arguments for escalate: `reason`/,
    );
  });

  it('keeps the JSON of five 8,000-character summaries whole within the tool result limit', async () => {
    const tasks = Array.from({ length: 5 }, (_, i) => ({ goal: `part ${i}` }));
    const { provider, seen } = recorded([
      { toolCalls: [call('delegate_parallel', { tasks })] },
      { content: 'merged' },
    ]);
    const h = harness(provider, { toolNames: CREW_TOOLS });
    const first = await h.attempt(h.checkpoint, { crew: crewOptions().crew });
    if (first.status !== 'delegating') throw new Error(`expected delegating, got ${first.status}`);
    // Quotes and newlines take two characters each in JSON.
    const results = first.delegation.tasks.map((task, i) =>
      entry(i, task.childRunId, `START${i} ${'"quoted"\n'.repeat(800)}END${i}`),
    );
    await h.attempt(h.checkpoint, { resolutions: [{ requestId: first.delegation.callId, results }] });
    const content = resultOf(seen[1] as ChatMessage[], 'delegate_parallel') ?? '';
    expect(content.length).toBeLessThanOrEqual(30_000);
    expect(content.length).toBeGreaterThan(29_000);
    const parsed = JSON.parse(content) as CrewResultEntry[];
    expect(parsed.map((e) => e.index)).toEqual([0, 1, 2, 3, 4]);
    for (const [i, e] of parsed.entries()) {
      expect(e).toMatchObject({ runId: `run_child_${i}`, status: 'completed', durationMs: 1_000 + i });
      expect(e.summary.startsWith(`START${i} `)).toBe(true);
      expect(e.summary.endsWith(`END${i}`)).toBe(true);
      expect(e.summary).toMatch(/characters of this summary cut/);
    }
  });
});

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('runAttempt with client tools', () => {
  it('offers the client tools beside the built-in ones', async () => {
    const seen: string[][] = [];
    const provider: ModelProvider = {
      name: 'tools',
      async complete(request) {
        seen.push(request.tools.map((tool) => tool.name));
        return {
          content: 'no call',
          toolCalls: [],
          finishReason: 'stop',
          usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        };
      },
    };
    const h = harness(provider, { toolNames: ['read_file'] });
    await h.attempt(h.checkpoint, { clientTools: [weather] });
    expect(seen).toEqual([['read_file', 'get_weather']]);
  });

  it("runs the turn's built-in calls first, then requests every valid client call at once; invalid ones go back to the model", async () => {
    const script: ReplayScript = [
      {
        toolCalls: [
          call('get_weather', { city: 'Oslo' }),
          call('get_weather', { town: 'Bergen' }),
          call('write_file', { path: 'a.txt', content: 'a' }),
          call('get_weather', { city: 'Rome' }),
        ],
      },
      { content: 'finished' },
    ];
    const h = harness(createReplayProvider(script));
    const started = Date.now();
    const first = await h.attempt(h.checkpoint, { clientTools: [weather], toolTimeoutMs: 60_000 });
    if (first.status !== 'tool_calls') throw new Error(`expected tool_calls, got ${first.status}`);
    expect(first.calls.map(({ callId, name, arguments: args }) => ({ callId, name, args }))).toEqual([
      { callId: 'call_0_0', name: 'get_weather', args: { city: 'Oslo' } },
      { callId: 'call_0_3', name: 'get_weather', args: { city: 'Rome' } },
    ]);
    for (const pending of first.calls) {
      expect(pending.requestId).toMatch(/^tcr_[0-9a-z]{26}$/);
      expect(Date.parse(pending.expiresAt) - started).toBeGreaterThanOrEqual(60_000);
      expect(Date.parse(pending.expiresAt) - started).toBeLessThan(65_000);
    }
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).toBe('a');
    const results = h.events.filter((e) => e.type === 'tool.result').map((e) => e.data);
    expect(results).toEqual([
      expect.objectContaining({
        callId: 'call_0_1',
        ok: false,
        content: expect.stringContaining('missing required field `city`'),
      }),
      expect.objectContaining({ callId: 'call_0_2', ok: true }),
    ]);
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    expect(toolOutputsOf(stored.waitpoint)).toEqual(first.calls.map((c) => ({ kind: 'tool_output', ...c })));

    // Resumed with one output (an error) and one timeout: each call gets its result, in call order.
    const [oslo, rome] = first.calls as [(typeof first.calls)[0], (typeof first.calls)[0]];
    const resumed = await h.attempt(stored, {
      clientTools: [weather],
      resolutions: [
        { requestId: rome.requestId, timedOut: true },
        { requestId: oslo.requestId, output: 'no such city', isError: true },
      ],
    });
    expect(resumed).toEqual({ status: 'completed', output: 'finished' });
    expect(stored.waitpoint).toBeUndefined();
    const after = h.events
      .filter((e) => e.type === 'tool.result')
      .slice(2)
      .map((e) => e.data);
    expect(after).toEqual([
      { callId: 'call_0_0', name: 'get_weather', ok: false, content: 'no such city' },
      {
        callId: 'call_0_3',
        name: 'get_weather',
        ok: false,
        content: expect.stringContaining('The client returned no result in time'),
      },
    ]);
  });

  it('refuses to resume without the fate of every call it waits on', async () => {
    const h = harness(
      createReplayProvider([{ toolCalls: [call('get_weather', { city: 'Oslo' })] }, { content: 'x' }]),
    );
    const first = await h.attempt(h.checkpoint, { clientTools: [weather] });
    expect(first.status).toBe('tool_calls');
    const again = await h.attempt(h.checkpoint, { clientTools: [weather], resolutions: [] });
    expect(again).toMatchObject({ status: 'failed', error: { code: 'ERR_AGENT_INTERNAL' } });
  });
});

describe('runAttempt with an MCP server tool', () => {
  it("offers it with its server's schema, and names the server in tool.call and tool.result", async () => {
    const parameters = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };
    const offered: unknown[] = [];
    const mcpTool: Tool = {
      name: 'everything__echo',
      server: 'everything',
      schema: {
        name: 'everything__echo',
        toolset: 'mcp',
        description: 'Echoes',
        parameters: parameters as never,
      },
      parseArguments: jsonSchemaArguments({ name: 'everything__echo', parameters }),
      execute: async (args) => ({ ok: true, content: `Echo: ${(args as { message: string }).message}` }),
    };
    const replay = createReplayProvider([
      { toolCalls: [call('everything__echo', { message: 'hi' }), call('everything__echo', {})] },
      { content: 'done' },
    ]);
    const provider: ModelProvider = {
      name: 'seen',
      complete(request) {
        offered.push(request.tools.find((tool) => tool.name === 'everything__echo'));
        return replay.complete(request);
      },
    };
    const h = harness(provider, { toolNames: ['todo'] });
    const outcome = await runAttempt({
      checkpoint: h.checkpoint,
      provider,
      tools: [mcpTool],
      signal: h.controller.signal,
      emit: (event) => h.events.push(event),
      saveCheckpoint: async () => undefined,
    });
    expect(outcome).toEqual({ status: 'completed', output: 'done' });
    expect(offered[0]).toEqual({ name: 'everything__echo', description: 'Echoes', parameters });
    const calls = h.events.filter((e) => e.type === 'tool.call').map((e) => e.data);
    expect(calls).toEqual([
      { callId: 'call_0_0', name: 'everything__echo', arguments: '{"message":"hi"}', server: 'everything' },
      { callId: 'call_0_1', name: 'everything__echo', arguments: '{}', server: 'everything' },
    ]);
    const results = h.events.filter((e) => e.type === 'tool.result').map((e) => e.data);
    expect(results).toEqual([
      { callId: 'call_0_0', name: 'everything__echo', ok: true, content: 'Echo: hi', server: 'everything' },
      {
        callId: 'call_0_1',
        name: 'everything__echo',
        ok: false,
        content: expect.stringContaining('missing required field `message`'),
        server: 'everything',
      },
    ]);
  });
});

describe('crewResultContent', () => {
  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  const make = (summaries: string[]): CrewResultEntry[] =>
    summaries.map((summary, index) => ({
      index,
      runId: `run_${index}`,
      status: 'completed',
      summary,
      usage,
      durationMs: 5,
    }));

  it('is the entries as JSON when they fit', () => {
    const entries = make(['one', 'two']);
    expect(crewResultContent(entries, 1_000)).toBe(JSON.stringify(entries));
  });

  it('shortens the long summaries first, keeping the short ones whole', () => {
    const entries = make(['short', 'x'.repeat(5_000), 'y'.repeat(3_000)]);
    const text = crewResultContent(entries, 4_000);
    expect(text.length).toBeLessThanOrEqual(4_000);
    const [a, b, c] = JSON.parse(text) as CrewResultEntry[];
    expect(a?.summary).toBe('short');
    expect(b?.summary).toMatch(
      /^x+\n\[\.\.\. \d+ characters of this summary cut to fit the result \.\.\.\]\nx+$/,
    );
    // Shortened evenly: both end near the same length.
    expect(Math.abs((b?.summary.length ?? 0) - (c?.summary.length ?? 0))).toBeLessThan(20);
  });

  it('stays valid JSON when even the fields alone pass the limit', () => {
    const entries = make(['a'.repeat(500), 'b'.repeat(500)]);
    const text = crewResultContent(entries, 50);
    expect((JSON.parse(text) as CrewResultEntry[]).map((e) => e.runId)).toEqual(['run_0', 'run_1']);
  });
});

describe('runAttempt with an approval policy', () => {
  const turn: ReplayScript = [
    {
      toolCalls: [
        call('write_file', { path: 'a.txt', content: 'asked\n' }),
        call('list_dir', { path: '.' }),
        call('bash', { command: 'echo one > b.txt' }),
        call('no_such_tool', {}),
      ],
    },
    { content: 'finished' },
  ];
  const approval = compileApprovalPolicy({ tools: ['write_file', 'no_such_tool'], bash: { ask: ['>'] } });
  const results = (events: RunEventInput[]) =>
    events
      .filter((e) => e.type === 'tool.result')
      .map((e) => e.data as { callId: string; ok: boolean; content: string });

  it("holds the whole turn for the calls the policy asks about, then runs each as decided, in the model's order", async () => {
    const h = harness(createReplayProvider(turn));
    const started = Date.now();
    const held = await h.attempt(h.checkpoint, { approval });
    if (held.status !== 'approvals') throw new Error(`expected approvals, got ${held.status}`);
    // A call of a tool the run does not have is not asked about: the model is told there is none.
    expect(held.approvals.map(({ callId, tool, reason }) => ({ callId, tool, reason }))).toEqual([
      { callId: 'call_0_0', tool: 'write_file', reason: 'tools: write_file' },
      { callId: 'call_0_2', tool: 'bash', reason: 'bash.ask: >' },
    ]);
    for (const pending of held.approvals) {
      expect(pending.requestId).toMatch(/^apr_[0-9a-z]{26}$/);
      expect(pending.onTimeout).toBe('reject');
      expect(Date.parse(pending.expiresAt) - started).toBeGreaterThanOrEqual(60 * 60_000);
    }
    expect(held.approvals[0]?.arguments).toEqual({ path: 'a.txt', content: 'asked\n' });
    // Nothing ran, the free calls neither.
    expect(results(h.events)).toEqual([]);
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    expect(approvalsOf(stored.waitpoint)).toEqual(held.approvals.map((a) => ({ kind: 'approval', ...a })));

    const [write, bash] = held.approvals as [(typeof held.approvals)[0], (typeof held.approvals)[0]];
    const resumed = await h.attempt(stored, {
      approval,
      resolutions: [
        {
          requestId: bash.requestId,
          decision: { decision: 'edit', arguments: { command: 'echo two > b.txt' }, by: 'acme' },
        },
        { requestId: write.requestId, decision: { decision: 'reject', message: 'not a.txt', by: 'acme' } },
      ],
    });
    expect(resumed).toEqual({ status: 'completed', output: 'finished' });
    const after = results(h.events);
    expect(after.map(({ callId, ok }) => ({ callId, ok }))).toEqual([
      { callId: 'call_0_0', ok: false },
      { callId: 'call_0_1', ok: true },
      { callId: 'call_0_2', ok: true },
      { callId: 'call_0_3', ok: false },
    ]);
    expect(after[0]?.content).toContain(
      'A reviewer refused this write_file call, so it did not run. Their message: not a.txt',
    );
    expect(after[2]?.content).toMatch(
      /^A reviewer changed the arguments before the call ran; it ran with: \{"command":"echo two > b.txt"\}/,
    );
    await expect(readFile(join(workspace, 'a.txt'), 'utf8')).rejects.toThrow();
    expect(await readFile(join(workspace, 'b.txt'), 'utf8')).toBe('two\n');
    // The decisions were that turn's: the next turn starts without them.
    expect(stored.decisions).toBeUndefined();
  });

  it("takes the policy's onTimeout at the deadline: a refusal that says why, or the call run", async () => {
    for (const onTimeout of ['reject', 'approve'] as const) {
      const h = harness(createReplayProvider([turn[0] as ReplayScript[number], { content: 'finished' }]));
      const policy = compileApprovalPolicy({ tools: ['write_file'], onTimeout });
      const held = await h.attempt(h.checkpoint, { approval: policy });
      if (held.status !== 'approvals') throw new Error(`expected approvals, got ${held.status}`);
      const stored = parseCheckpoint(h.saves.at(-1) as string);
      const requestId = held.approvals[0]?.requestId as string;
      await h.attempt(stored, { approval: policy, resolutions: [{ requestId, timedOut: true }] });
      const [written] = results(h.events);
      expect(written?.ok).toBe(onTimeout === 'approve');
      if (onTimeout === 'reject')
        expect(written?.content).toContain('No reviewer decided on this write_file call before its deadline');
      else expect(await readFile(join(workspace, 'a.txt'), 'utf8')).toBe('asked\n');
      await rm(join(workspace, 'a.txt'), { force: true });
    }
  });

  it('refuses to resume without a decision on every held call', async () => {
    const h = harness(createReplayProvider(turn));
    const held = await h.attempt(h.checkpoint, { approval });
    if (held.status !== 'approvals') throw new Error(`expected approvals, got ${held.status}`);
    const stored = parseCheckpoint(h.saves.at(-1) as string);
    const outcome = await h.attempt(stored, {
      approval,
      resolutions: [
        { requestId: held.approvals[0]?.requestId as string, decision: { decision: 'approve', by: 'x' } },
      ],
    });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'ERR_AGENT_INTERNAL' } });
    expect((outcome as { error: Error }).error.message).toContain(
      `approval request ${held.approvals[1]?.requestId}`,
    );
  });
});

describe('runAttempt with messages sent to the live run', () => {
  it("puts them in the transcript before the next model turn, after every call's result, and saves them first", async () => {
    const seen: ChatMessage[][] = [];
    const replay = createReplayProvider([
      { toolCalls: [call('write_file', { path: 'a.txt', content: 'a' }), call('list_dir', { path: '.' })] },
      { content: 'done' },
    ]);
    const provider: ModelProvider = {
      name: 'replay',
      complete(request) {
        seen.push(structuredClone(request.messages));
        return replay.complete(request);
      },
    };
    const inbox = [
      [],
      [
        { messageId: 'msg_1', content: 'Also list it' },
        { messageId: 'msg_2', content: 'Be brief' },
      ],
    ];
    const h = harness(provider);
    const outcome = await h.attempt(h.checkpoint, { messages: { take: async () => inbox.shift() ?? [] } });
    expect(outcome).toEqual({ status: 'completed', output: 'done' });
    // The second turn saw the two calls' results, then the messages, as the user's.
    expect(seen[1]?.slice(-4).map((m) => m.role)).toEqual(['tool', 'tool', 'user', 'user']);
    expect(seen[1]?.slice(-2)).toEqual([
      { role: 'user', content: 'Also list it', steered: true },
      { role: 'user', content: 'Be brief', steered: true },
    ]);
    const delivered = h.events.filter((e) => e.type === 'message.delivered').map((e) => e.data);
    expect(delivered).toEqual([{ messageId: 'msg_1' }, { messageId: 'msg_2' }]);
    // Saved before the model turn that sees them.
    expect(parseCheckpoint(h.saves.at(-1) as string).messages.at(-1)).toEqual({
      role: 'user',
      content: 'Be brief',
      steered: true,
    });
  });
});

describe('runAttempt with approvals decided in process', () => {
  it('asks the handler for each held call in order and goes on: edited, refused when it throws, onTimeout at the deadline', async () => {
    const script: ReplayScript = [
      {
        toolCalls: [
          call('write_file', { path: 'a.txt', content: 'asked' }),
          call('write_file', { path: 'b.txt', content: 'asked' }),
          call('write_file', { path: 'c.txt', content: 'asked' }),
        ],
      },
      { content: 'finished' },
    ];
    const h = harness(createReplayProvider(script));
    const asked: string[] = [];
    const outcome = await h.attempt(h.checkpoint, {
      approval: compileApprovalPolicy({ tools: ['write_file'], timeoutMs: 1_000, onTimeout: 'approve' }),
      onApprovalRequest: async (request, { signal }) => {
        const path = (request.arguments as { path: string }).path;
        asked.push(path);
        if (path === 'a.txt') return { decision: 'edit', arguments: { path: 'a.txt', content: 'edited' } };
        if (path === 'b.txt') throw new Error('the reviewer is away');
        // c.txt: nobody answers; the deadline approves it, and the handler hears it is no longer wanted.
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
    });
    expect(outcome).toEqual({ status: 'completed', output: 'finished' });
    expect(asked).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(await readFile(join(workspace, 'a.txt'), 'utf8')).toBe('edited');
    await expect(readFile(join(workspace, 'b.txt'), 'utf8')).rejects.toThrow();
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('asked');
    const resolved = h.events.filter((e) => e.type === 'approval.resolved').map((e) => e.data);
    expect(resolved).toEqual([
      expect.objectContaining({ decision: 'edit', by: 'in_process' }),
      expect.objectContaining({
        decision: 'reject',
        by: 'in_process',
        message: 'The approval handler failed: the reviewer is away.',
      }),
      expect.objectContaining({ decision: 'approve', by: 'timeout', timedOut: true }),
    ]);
    expect(h.events.filter((e) => e.type === 'approval.requested')).toHaveLength(3);
  });
});

describe('runAttempt budgets', () => {
  /** Turns that each call `todo`, reported as 1,000 tokens in (400 of them cached) and 100 out. */
  async function pricedServer(turns: number) {
    const server = await startFakeOpenAI();
    for (let i = 0; i < turns; i++) {
      const turn = streamToolCalls([
        {
          name: 'todo',
          arguments: JSON.stringify({ todos: [{ id: '1', content: `step ${i}`, status: 'pending' }] }),
        },
      ]);
      if (turn.kind === 'stream') {
        turn.usage = {
          prompt_tokens: 1_000,
          completion_tokens: 100,
          prompt_tokens_details: { cached_tokens: 400 },
        };
      }
      server.enqueue(turn);
    }
    // A profile's prices reach the provider through the one path the worker takes.
    const provider = resolveProvider(
      { profile: 'priced' },
      {
        allowReplay: false,
        profiles: [
          {
            name: 'priced',
            provider: 'openai',
            baseURL: server.baseURL,
            model: 'm',
            prices: { input: 2, output: 10, cachedInput: 1 },
            timeoutMs: 5_000,
            maxRetries: 0,
          },
        ],
      },
    );
    return { server, provider };
  }

  it('prices each turn: input, cached input and output per million tokens', () => {
    const usage = { inputTokens: 1_000, outputTokens: 100, totalTokens: 1_100, cacheReadTokens: 400 };
    expect(turnCost(usage, { input: 2, output: 10, cachedInput: 1 })).toBeCloseTo(0.0026, 10);
    expect(turnCost(usage, { input: 2, output: 10 })).toBeCloseTo(0.003, 10);
  });

  it.each([
    ['maxCostUsd', { maxCostUsd: 0.005 }],
    ['maxTotalTokens', { maxTotalTokens: 2_000 }],
  ] as const)('stops at the turn boundary past limits.%s, the tool pair kept whole', async (name, limits) => {
    const { server, provider } = await pricedServer(5);
    try {
      const h = harness(provider);
      const outcome = await h.attempt(h.checkpoint, { limits });
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'ERR_BUDGET_EXCEEDED' } });
      expect(outcome.status === 'failed' && outcome.error.message).toContain(`limits.${name}`);
      // Two turns, each with its result: the third was never asked for.
      expect(server.requests).toHaveLength(2);
      expect(h.checkpoint.messages.at(-1)?.role).toBe('tool');
      expect(h.checkpoint.usage).toMatchObject({ inputTokens: 2_000, outputTokens: 200, totalTokens: 2_200 });
      expect(h.checkpoint.usage.costUsd).toBeCloseTo(0.0052, 10);
      const usage = h.events.filter((e) => e.type === 'usage').at(-1);
      expect((usage?.data as { costUsd?: number } | undefined)?.costUsd).toBeCloseTo(0.0052, 10);
    } finally {
      await server.close();
    }
  });
  it("fails at the turn boundary with beforeTurn's error, each turn's usage told before it", async () => {
    const { server, provider } = await pricedServer(5);
    try {
      const h = harness(provider);
      const asked: number[] = [];
      const outcome = await h.attempt(h.checkpoint, {
        beforeTurn: async () => {
          // What the usage events said so far, when the hook is asked.
          const seen = h.events.filter((e) => e.type === 'usage').length;
          asked.push(seen);
          return seen >= 2 ? new TetherError('ERR_TENANT_BUDGET_EXCEEDED', 'over') : undefined;
        },
      });
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'ERR_TENANT_BUDGET_EXCEEDED' } });
      expect(asked).toEqual([0, 1, 2]);
      expect(server.requests).toHaveLength(2);
      // The second turn's call has its result: the run stopped between pairs, never inside one.
      expect(h.checkpoint.messages.at(-1)?.role).toBe('tool');
      expect(h.checkpoint.usage.totalTokens).toBe(2_200);
    } finally {
      await server.close();
    }
  });
});
