import { Value } from '@sinclair/typebox/value';
import { ReplayScriptSchema } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import type { ChatMessage, ModelRequest } from './model-provider.js';
import { createReplayProvider, parseReplayScript } from './replay-provider.js';

const script = [
  { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
  {
    content: 'Two things at once.',
    toolCalls: [
      { name: 'patch', arguments: { path: 'a.txt', old_string: 'a', new_string: 'b' } },
      { name: 'bash', arguments: { command: 'cat a.txt' } },
    ],
  },
  { content: 'Done: a.txt now says b.' },
];

function request(messages: ChatMessage[], overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages, tools: [], signal: new AbortController().signal, ...overrides };
}

/** The conversation after `turns` assistant turns (each followed by its tool results). */
function historyAfter(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a test.' },
    { role: 'user', content: 'Change a.txt.' },
  ];
  for (let turn = 0; turn < turns; turn++) {
    messages.push({
      role: 'assistant',
      content: '',
      toolCalls: [{ id: `call_${turn}_0`, name: 'x', arguments: '{}' }],
    });
    messages.push({ role: 'tool', toolCallId: `call_${turn}_0`, content: 'ok' });
  }
  return messages;
}

function codeOf(action: () => unknown): string | undefined {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentError);
    return (error as AgentError).code;
  }
  return undefined;
}

describe('replay provider', () => {
  it('plays the turn given by the number of assistant messages, with deterministic call ids', async () => {
    const provider = createReplayProvider(script);

    const first = await provider.complete(request(historyAfter(0)));
    expect(first).toMatchObject({
      content: '',
      toolCalls: [{ id: 'call_0_0', name: 'read_file', arguments: '{"path":"a.txt"}' }],
      finishReason: 'tool_calls',
    });

    const second = await provider.complete(request(historyAfter(1)));
    expect(second.content).toBe('Two things at once.');
    expect(second.toolCalls).toEqual([
      { id: 'call_1_0', name: 'patch', arguments: '{"path":"a.txt","old_string":"a","new_string":"b"}' },
      { id: 'call_1_1', name: 'bash', arguments: '{"command":"cat a.txt"}' },
    ]);
  });

  it('is stateless: a fresh provider (another worker) resumes at the same turn, and a repeated call repeats it', async () => {
    const resumed = await createReplayProvider(script).complete(request(historyAfter(2)));
    const again = await createReplayProvider(script).complete(request(historyAfter(2)));
    expect({ ...resumed, firstTokenMs: 0 }).toEqual({ ...again, firstTokenMs: 0 });
    expect(resumed.firstTokenMs).toBeGreaterThanOrEqual(0);
    expect(resumed).toMatchObject({
      content: 'Done: a.txt now says b.',
      toolCalls: [],
      finishReason: 'stop',
    });
    expect(resumed.usage.totalTokens).toBe(resumed.usage.inputTokens + resumed.usage.outputTokens);
    expect(resumed.usage.outputTokens).toBeGreaterThan(0);
  });

  it('counts only the turns after the run’s input: a session’s earlier turns come before it', async () => {
    const provider = createReplayProvider(script);
    const earlier: ChatMessage[] = [
      { role: 'user', content: 'An earlier message.' },
      { role: 'assistant', content: 'An earlier answer.' },
    ];
    const [system, ...rest] = historyAfter(1);
    const turn = await provider.complete(request([system as ChatMessage, ...earlier, ...rest]));
    expect(turn.toolCalls.map((call) => call.name)).toEqual(['patch', 'bash']);
  });

  it('streams the content to onDelta in pieces', async () => {
    const deltas: string[] = [];
    await createReplayProvider(script).complete(
      request(historyAfter(2), { onDelta: (text) => deltas.push(text) }),
    );
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Done: a.txt now says b.');
  });

  it('fails clearly, not retryably, past the end of the script', async () => {
    const error = await createReplayProvider(script)
      .complete(request(historyAfter(3)))
      .catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(AgentError);
    expect(error).toMatchObject({ code: 'ERR_MODEL_REPLAY_EXHAUSTED', retryable: false });
    expect((error as AgentError).message).toMatch(/3 turn\(s\).*needs turn 3/);
  });

  it('honours the abort signal, before and while streaming', async () => {
    const provider = createReplayProvider(script, { deltaDelayMs: 5 });
    await expect(
      provider.complete(request(historyAfter(0), { signal: AbortSignal.abort() })),
    ).rejects.toMatchObject({
      code: 'ERR_MODEL_ABORTED',
    });

    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = provider.complete(
      request(historyAfter(2), {
        signal: controller.signal,
        onDelta: (text) => {
          deltas.push(text);
          controller.abort();
        },
      }),
    );
    await expect(pending).rejects.toMatchObject({ code: 'ERR_MODEL_ABORTED', retryable: false });
    expect(deltas).toHaveLength(1);
  });
});

describe('replay script validation', () => {
  it('accepts the scripts of the issue and agrees with ReplayScriptSchema', () => {
    expect(parseReplayScript(script)).toBe(script);
    expect(Value.Check(ReplayScriptSchema, script)).toBe(true);
  });

  const cases: Array<[string, unknown, RegExp]> = [
    ['not an array', { content: 'x' }, /expected an array of turns/],
    ['no turns', [], /no turns/],
    [
      'a tool call without a name',
      [{ content: 'a' }, { toolCalls: [{ arguments: {} }] }],
      /turn 1 at toolCalls\.0\.name/,
    ],
    [
      'arguments that are not an object',
      [{ toolCalls: [{ name: 'bash', arguments: 'ls' }] }],
      /turn 0 at toolCalls\.0\.arguments/,
    ],
    ['an empty toolCalls list', [{ toolCalls: [] }], /turn 0 at toolCalls/],
    ['a content that is not text', [{ content: 'ok' }, { content: 42 }], /turn 1 at content/],
    ['an unknown field', [{ content: 'ok', model: 'gpt' }], /turn 0 at model/],
    ['a turn that is not an object', ['hello'], /turn 0: /],
  ];
  for (const [label, input, message] of cases) {
    it(`refuses ${label}, naming the turn`, () => {
      expect(codeOf(() => parseReplayScript(input))).toBe('ERR_MODEL_REPLAY_SCRIPT_INVALID');
      expect(() => parseReplayScript(input)).toThrow(message);
      expect(Value.Check(ReplayScriptSchema, input)).toBe(false);
      expect(codeOf(() => createReplayProvider(input))).toBe('ERR_MODEL_REPLAY_SCRIPT_INVALID');
    });
  }
});
