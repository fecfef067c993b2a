import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEventInput, ToolCall } from '@tether/protocol';
import { createTools } from '@tether/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import type { ChatMessage, ModelProvider, ModelRequest, ModelResponse } from '../providers/model-provider.js';
import { initialCheckpoint, parseCheckpoint, storedCheckpoint } from './checkpoint.js';
import {
  compactTranscript,
  familyContextWindow,
  isContextOverflow,
  KEEP_RECENT_TURNS,
  prunedResult,
  RequestCounter,
  recentStart,
  SUMMARY_HEADER,
  SUMMARY_PROMPT,
} from './compaction.js';
import { type AttemptParams, runAttempt } from './run-attempt.js';

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'tether-compaction-'));
  // About 1,000 tokens of text the model reads again and again.
  await writeFile(
    join(workspace, 'big.txt'),
    Array.from({ length: 150 }, (_, i) => `line ${i} of the log`).join('\n'),
  );
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

const usage = (input: number) => ({ inputTokens: input, outputTokens: 5, totalTokens: input + 5 });

/**
 * A model with a small context window, as a model server is: a request past `window` tokens is
 * refused as OpenAI refuses it. It reads `big.txt` for `turns` turns, then answers; a
 * summarisation request gets a summary. Every request is kept.
 */
function smallModel(options: { window: number; turns: number; reportScale?: number }) {
  const counter = new RequestCounter();
  const requests: ModelRequest['messages'][] = [];
  let turn = 0;
  let summaries = 0;
  const provider: ModelProvider = {
    name: 'small',
    async complete(request): Promise<ModelResponse> {
      requests.push(request.messages.map((message) => ({ ...message })));
      const tokens = counter.raw(request.messages, request.tools);
      if (tokens > options.window) {
        throw new AgentError(
          'ERR_MODEL_BAD_REQUEST',
          `small: model server HTTP 400: This model's maximum context length is ${options.window} tokens. However, your messages resulted in ${tokens} tokens. (context_length_exceeded)`,
        );
      }
      const reported = Math.round(tokens * (options.reportScale ?? 1));
      if (request.messages[0]?.content === SUMMARY_PROMPT) {
        summaries++;
        return {
          content: `Task: read big.txt many times. Progress: summary ${summaries}.`,
          toolCalls: [],
          usage: usage(reported),
          finishReason: 'stop',
        };
      }
      turn++;
      if (turn > options.turns) {
        return { content: 'done', toolCalls: [], usage: usage(reported), finishReason: 'stop' };
      }
      const call: ToolCall = { id: `call_${turn}`, name: 'read_file', arguments: '{"path":"big.txt"}' };
      return {
        content: `turn ${turn}`,
        toolCalls: [call],
        usage: usage(reported),
        finishReason: 'tool_calls',
      };
    },
  };
  return { provider, requests, summaries: () => summaries };
}

function attempt(provider: ModelProvider, extra: Partial<AttemptParams> = {}) {
  const events: RunEventInput[] = [];
  const saves: string[] = [];
  const checkpoint = initialCheckpoint({
    systemPrompt: 'You are a test agent.',
    input: 'read big.txt 200 times',
  });
  const controller = new AbortController();
  const tools = createTools(
    {
      runId: 'run_test',
      workspace,
      emit: (event) => events.push(event),
      signal: controller.signal,
      todos: { get: () => checkpoint.todos, set: (items) => (checkpoint.todos = items) },
      sandbox: 'none',
    },
    ['read_file'],
  );
  const outcome = runAttempt({
    checkpoint,
    provider,
    tools,
    signal: controller.signal,
    emit: (event) => events.push(event),
    saveCheckpoint: async (saved) => {
      saves.push(storedCheckpoint(saved));
    },
    limits: { maxSteps: 1_000 },
    ...extra,
  });
  return { outcome, events, saves, checkpoint };
}

/** Every tool call followed by exactly one result, and no result without its call. */
function expectPaired(messages: readonly ChatMessage[]) {
  const open = new Set<string>();
  for (const message of messages) {
    if (message.role === 'assistant') {
      expect(open.size).toBe(0);
      for (const call of message.toolCalls ?? []) open.add(call.id);
    } else if (message.role === 'tool') {
      expect(open.delete(message.toolCallId)).toBe(true);
    } else {
      expect(open.size).toBe(0);
    }
  }
}

const compacted = (events: RunEventInput[]) =>
  events
    .filter((event) => event.type === 'context.compacted')
    .map((event) => event.data as Record<string, unknown>);

describe('a run longer than its model context', () => {
  it('completes 200 turns of large tool results by pruning and summarising', async () => {
    const model = smallModel({ window: 6_000, turns: 200 });
    const run = attempt(model.provider, { context: { compaction: true, window: 6_000 } });
    const outcome = await run.outcome;
    expect(outcome).toEqual({ status: 'completed', output: 'done' });
    const told = compacted(run.events);
    expect(told.length).toBeGreaterThan(5);
    expect(told.some((data) => data.strategy === 'summarise')).toBe(true);
    for (const data of told) {
      expect(data.afterTokens as number).toBeLessThan(data.beforeTokens as number);
      expect(data.window).toBe(6_000);
    }
    // No request passed the window (the model would have refused it), and the transcript stays small.
    expect(model.requests.length).toBe(201 + model.summaries());
    expect(run.checkpoint.messages.length).toBeLessThan(20);
    expectPaired(run.checkpoint.messages);
    // The system prompt and the input stay verbatim, first.
    expect(run.checkpoint.messages.slice(0, 2)).toEqual([
      { role: 'system', content: 'You are a test agent.' },
      { role: 'user', content: 'read big.txt 200 times' },
    ]);
  });

  it('asks the run own model for the summary with the fixed prompt, the task and the transcript', async () => {
    const model = smallModel({ window: 6_000, turns: 30 });
    const run = attempt(model.provider, { context: { compaction: true, window: 6_000 } });
    await run.outcome;
    const asked = model.requests.find((messages) => messages[0]?.content === SUMMARY_PROMPT);
    expect(asked).toHaveLength(2);
    const request = asked?.[1]?.content ?? '';
    expect(request).toContain("The agent's task:\nread big.txt 200 times");
    expect(request).toContain('The transcript to summarise:');
    expect(request).toMatch(/ASSISTANT: turn 1\n-> called read_file\(\{"path":"big.txt"\}\)/);
    // The next turn's request carries the summary in place of the turns it stands for.
    const index = model.requests.indexOf(asked as ChatMessage[]);
    const after = model.requests[index + 1] as ChatMessage[];
    expect(after[2]).toMatchObject({ role: 'user' });
    expect(after[2]?.content.startsWith(SUMMARY_HEADER)).toBe(true);
    expect(after[2]?.content).toContain('Progress: summary 1.');
  });

  it('counts the summarisation requests in the run usage', async () => {
    const model = smallModel({ window: 6_000, turns: 30 });
    const run = attempt(model.provider, { context: { compaction: true, window: 6_000 } });
    await run.outcome;
    expect(model.summaries()).toBeGreaterThan(0);
    // Each request, turns and summaries, reported 5 output tokens.
    expect(run.checkpoint.usage.outputTokens).toBe(5 * model.requests.length);
  });

  it('fails with ERR_CONTEXT_EXHAUSTED, saying so, when compaction is off', async () => {
    const model = smallModel({ window: 6_000, turns: 200 });
    const run = attempt(model.provider, { context: { compaction: false, window: 6_000 } });
    const outcome = await run.outcome;
    expect(outcome.status).toBe('failed');
    if (outcome.status !== 'failed') return;
    expect(outcome.error.code).toBe('ERR_CONTEXT_EXHAUSTED');
    expect(outcome.error.message).toMatch(
      /more than the model's context window \(6000 tokens\), and the run has compaction off/,
    );
    expect(compacted(run.events)).toEqual([]);
    // It stopped before a request the model would refuse.
    expect(model.requests.every((messages) => new RequestCounter().raw(messages, []) <= 6_000)).toBe(true);
  });

  it('learns an unknown window from the model refusing a request, then compacts', async () => {
    const model = smallModel({ window: 6_000, turns: 40 });
    const run = attempt(model.provider, { context: { compaction: true } });
    expect(await run.outcome).toEqual({ status: 'completed', output: 'done' });
    const told = compacted(run.events);
    expect(told.length).toBeGreaterThan(0);
    expect(told[0]?.window as number).toBeLessThanOrEqual(6_000);
  });

  it('turns a refusal as too long into ERR_CONTEXT_EXHAUSTED when compaction is off and the window unknown', async () => {
    const model = smallModel({ window: 6_000, turns: 40 });
    const run = attempt(model.provider, { context: { compaction: false } });
    const outcome = await run.outcome;
    expect(outcome.status === 'failed' && outcome.error.code).toBe('ERR_CONTEXT_EXHAUSTED');
  });

  it('compacts earlier when the provider counts more tokens than o200k_base does', async () => {
    const model = smallModel({ window: 8_000, turns: 40, reportScale: 1.5 });
    const plain = smallModel({ window: 8_000, turns: 40 });
    const scaled = attempt(model.provider, { context: { compaction: true, window: 8_000 } });
    const even = attempt(plain.provider, { context: { compaction: true, window: 8_000 } });
    await Promise.all([scaled.outcome, even.outcome]);
    const first = (events: RunEventInput[]) => run(events);
    const run = (events: RunEventInput[]) => events.findIndex((event) => event.type === 'context.compacted');
    expect(first(scaled.events)).toBeGreaterThan(-1);
    expect(first(scaled.events)).toBeLessThan(first(even.events));
  });

  it('resumes from the compacted checkpoint exactly', async () => {
    const model = smallModel({ window: 6_000, turns: 30 });
    const run = attempt(model.provider, { context: { compaction: true, window: 6_000 } });
    await run.outcome;
    // The save right after the first summary holds the compacted transcript.
    const saved = run.saves
      .map(parseCheckpoint)
      .find((cp) => cp.messages[2]?.content.startsWith(SUMMARY_HEADER));
    expect(saved).toBeDefined();
    expectPaired(saved?.messages ?? []);
    expect(saved?.messages.length).toBeLessThan(2 + 1 + 2 * (KEEP_RECENT_TURNS + 1));
  });

  it('leaves a run without context options alone', async () => {
    const model = smallModel({ window: 100_000, turns: 3 });
    const run = attempt(model.provider);
    expect(await run.outcome).toEqual({ status: 'completed', output: 'done' });
    expect(compacted(run.events)).toEqual([]);
  });
});

describe('compactTranscript', () => {
  const big = Array.from({ length: 700 }, (_, i) => `w${i}`).join(' ');
  /** System, input, then `turns` turns of one call each with a big result. */
  function transcript(turns: number, history: ChatMessage[] = []): ChatMessage[] {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      ...history,
      { role: 'user', content: 'task' },
    ];
    for (let i = 1; i <= turns; i++) {
      messages.push({
        role: 'assistant',
        content: `t${i}`,
        toolCalls: [{ id: `c${i}`, name: 'bash', arguments: '{}' }],
      });
      messages.push({ role: 'tool', toolCallId: `c${i}`, content: `${i}:${big}` });
    }
    return messages;
  }
  const noModel: ModelProvider = {
    name: 'none',
    complete: () => Promise.reject(new Error('no summary expected')),
  };

  it('prunes old tool results oldest first, never the recent turns, saving each where it can be read', async () => {
    const messages = transcript(8);
    const archived: string[] = [];
    const counter = new RequestCounter();
    const before = counter.count(messages, []);
    const result = await compactTranscript({
      messages,
      inputIndex: 2,
      tools: [],
      counter,
      threshold: before - 1_500,
      target: before - 1_500,
      provider: noModel,
      signal: new AbortController().signal,
      todos: [],
      archive: async (callId) => {
        archived.push(callId);
        return `.tether/context/${callId}.txt`;
      },
      onAnswer: () => {},
    });
    expect(result?.report.strategy).toBe('prune');
    expect(archived).toEqual(['c1', 'c2']);
    const pruned = result?.messages[3];
    expect(pruned?.content).toMatch(/^\[pruned: \d+ of \d+ characters/);
    expect(pruned?.content).toContain('read_file(".tether/context/c1.txt")');
    // The original messages are untouched; recent ones are the same objects.
    expect(messages[3]?.content).toBe(`1:${big}`);
    expect(result?.messages.slice(-2 * KEEP_RECENT_TURNS)).toEqual(messages.slice(-2 * KEEP_RECENT_TURNS));
    expect(result?.report.afterTokens).toBeLessThanOrEqual(before - 1_500);
  });

  it('summarises a session run history with its own middle, keeping the input', async () => {
    const history: ChatMessage[] = [
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
    ];
    const messages = transcript(6, history);
    const asked: ModelRequest[] = [];
    const summariser: ModelProvider = {
      name: 'summariser',
      complete: async (request) => {
        asked.push(request);
        return { content: `summary ${asked.length}`, toolCalls: [], usage: usage(10), finishReason: 'stop' };
      },
    };
    const result = await compactTranscript({
      messages,
      inputIndex: 3,
      tools: [],
      counter: new RequestCounter(),
      threshold: 10,
      target: 10,
      provider: summariser,
      signal: new AbortController().signal,
      todos: [{ id: '1', content: 'step one', status: 'completed' }],
      onAnswer: () => {},
    });
    expect(result?.report).toMatchObject({
      strategy: 'summarise',
      turnsSummarised: 1 + 6 - KEEP_RECENT_TURNS,
    });
    // Chunk by chunk, each request given the summary so far, no tools offered.
    expect(asked.length).toBeGreaterThan(1);
    expect(asked.every((request) => request.tools.length === 0)).toBe(true);
    expect(asked[0]?.messages[1]?.content).toContain('USER: earlier question');
    expect(asked[0]?.messages[1]?.content).toContain("The agent's todo list:\n- [completed] step one");
    expect(asked[1]?.messages[1]?.content).toContain('fold it into yours):\nsummary 1');
    const summary = `summary ${asked.length}`;
    expect(result?.inputIndex).toBe(1);
    expect(result?.messages.slice(0, 3)).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      { role: 'user', content: `${SUMMARY_HEADER}\n\n${summary}`, reminder: true },
    ]);
    expect(result?.messages.length).toBe(3 + 2 * KEEP_RECENT_TURNS);
    expectPaired(result?.messages ?? []);
  });

  it('does nothing when there is nothing old to compact', async () => {
    const messages = transcript(KEEP_RECENT_TURNS);
    const result = await compactTranscript({
      messages,
      inputIndex: 1,
      tools: [],
      counter: new RequestCounter(),
      threshold: 10,
      target: 10,
      provider: noModel,
      signal: new AbortController().signal,
      todos: [],
      onAnswer: () => {},
    });
    expect(result).toBeUndefined();
  });

  it('puts the recent turns at the third last model turn', () => {
    const messages = transcript(5);
    expect(messages[recentStart(messages, 1)]).toMatchObject({ role: 'assistant', content: 't3' });
    expect(recentStart(transcript(2), 1)).toBe(2);
  });
});

describe('RequestCounter', () => {
  it('counts a message once per object, and scales by what the provider reported', () => {
    const counter = new RequestCounter();
    const messages: ChatMessage[] = [{ role: 'user', content: 'hello world '.repeat(100) }];
    const raw = counter.raw(messages, []);
    expect(counter.count(messages, [])).toBe(raw);
    counter.calibrate(raw, raw * 2);
    expect(counter.count(messages, [])).toBe(raw * 2);
    counter.calibrate(raw, raw * 100);
    expect(counter.count(messages, [])).toBe(raw * 4);
    counter.calibrate(raw, 0);
    expect(counter.count(messages, [])).toBe(raw * 4);
  });
});

describe('helpers', () => {
  it('knows the context-length refusals of the model servers', () => {
    const refusal = (message: string) => new AgentError('ERR_MODEL_BAD_REQUEST', message);
    expect(isContextOverflow(refusal("This model's maximum context length is 8192 tokens"))).toBe(true);
    expect(isContextOverflow(refusal('prompt is too long: 210000 tokens > 200000 maximum'))).toBe(true);
    expect(isContextOverflow(refusal('invalid tool schema'))).toBe(false);
    expect(isContextOverflow(new AgentError('ERR_MODEL_UNAVAILABLE', 'context length'))).toBe(false);
  });

  it('knows the windows of model families', () => {
    expect(familyContextWindow('claude-sonnet-5-5')).toBe(200_000);
    expect(familyContextWindow('openai/gpt-4o-mini')).toBe(128_000);
    expect(familyContextWindow('my-local-model')).toBeUndefined();
    expect(familyContextWindow(undefined)).toBeUndefined();
  });

  it('prunes to a note, the head and the tail', () => {
    const text = `HEAD${'m'.repeat(5_000)}TAIL`;
    const pruned = prunedResult(text, undefined);
    expect(pruned.startsWith('[pruned: ')).toBe(true);
    expect(pruned).toContain('HEAD');
    expect(pruned.endsWith('TAIL')).toBe(true);
    expect(pruned.length).toBeLessThan(900);
  });
});
