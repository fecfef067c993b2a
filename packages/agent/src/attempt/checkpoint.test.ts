import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../providers/model-provider.js';
import {
  initialCheckpoint,
  ownMessages,
  parseCheckpoint,
  restoreHistory,
  storedCheckpoint,
} from './checkpoint.js';

const history: ChatMessage[] = [
  { role: 'user', content: 'earlier question' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'list_dir', arguments: '{}' }] },
  { role: 'tool', toolCallId: 'c1', content: 'a.txt' },
  { role: 'assistant', content: 'earlier answer' },
];

describe("a session run's checkpoint", () => {
  it('is stored without its history, which comes back in place from its reference', () => {
    const checkpoint = initialCheckpoint({
      systemPrompt: 'system',
      input: 'now this',
      history,
      historyRef: { entries: 4, budget: 64_000 },
    });
    checkpoint.messages.push({ role: 'assistant', content: 'done' });
    const stored = storedCheckpoint(checkpoint);
    expect(stored).not.toContain('earlier');
    const loaded = parseCheckpoint(stored);
    expect(loaded.messages.map((message) => message.content)).toEqual(['system', 'now this', 'done']);
    expect(restoreHistory(loaded, history)).toEqual(checkpoint);
    expect(ownMessages(loaded).map((message) => message.content)).toEqual(['now this', 'done']);
  });

  it('refuses a history that is not the one the checkpoint was made with', () => {
    const checkpoint = initialCheckpoint({
      systemPrompt: 'system',
      input: 'now this',
      history,
      historyRef: { entries: 4, budget: 64_000 },
    });
    const loaded = parseCheckpoint(storedCheckpoint(checkpoint));
    expect(() => restoreHistory(loaded, history.slice(1))).toThrow(/history had 4 messages/);
  });

  it('is stored whole without a reference (a run of no session, or an older checkpoint)', () => {
    const alone = initialCheckpoint({ systemPrompt: 'system', input: 'hi' });
    expect(parseCheckpoint(storedCheckpoint(alone))).toEqual(alone);
    const unreferenced = initialCheckpoint({ systemPrompt: 'system', input: 'hi', history });
    expect(parseCheckpoint(storedCheckpoint(unreferenced))).toEqual(unreferenced);
  });
});

describe("a checkpoint's waitpoint", () => {
  const children = {
    kind: 'children' as const,
    requestId: 'call_1',
    callId: 'call_1',
    name: 'delegate_parallel' as const,
    tasks: [
      { goal: 'a', context: 'ctx', toolsets: ['base'], childRunId: 'run_child_a' },
      { goal: 'b', childRunId: 'run_child_b' },
    ],
  };
  const question = {
    kind: 'question' as const,
    requestId: 'clr_1',
    callId: 'call_2',
    question: 'Which colour?',
    choices: ['red', 'blue'],
    expiresAt: '2026-12-02T10:00:00.000Z',
  };
  const calls = ['tcr_1', 'tcr_2'].map((requestId, i) => ({
    kind: 'tool_output' as const,
    requestId,
    callId: `call_${3 + i}`,
    name: 'get_weather',
    arguments: { city: i === 0 ? 'Oslo' : 'Rome' },
    expiresAt: '2026-12-02T10:10:00.000Z',
  }));

  it('is stored and read back with the checkpoint, a session run included', () => {
    for (const requests of [[children], [question], calls]) {
      const waitpoint = { requests };
      const alone = { ...initialCheckpoint({ systemPrompt: 'system', input: 'hi' }), waitpoint };
      expect(parseCheckpoint(storedCheckpoint(alone))).toEqual(alone);
      const session = {
        ...initialCheckpoint({
          systemPrompt: 'system',
          input: 'hi',
          history,
          historyRef: { entries: 4, budget: 1 },
        }),
        waitpoint,
      };
      const loaded = restoreHistory(parseCheckpoint(storedCheckpoint(session)), history);
      expect(loaded).toEqual(session);
    }
  });

  it('is read from a checkpoint stored before it, with the fields each kind had then', () => {
    const base = initialCheckpoint({ systemPrompt: 'system', input: 'hi' });
    const { kind: _c, requestId: _r, ...pendingDelegation } = children;
    const { kind: _q, ...pendingClarify } = question;
    const pendingToolCalls = calls.map(({ kind: _t, ...call }) => call);
    expect(parseCheckpoint(JSON.stringify({ ...base, pendingDelegation }))).toEqual({
      ...base,
      waitpoint: { requests: [children] },
    });
    expect(parseCheckpoint(JSON.stringify({ ...base, pendingClarify }))).toEqual({
      ...base,
      waitpoint: { requests: [question] },
    });
    expect(parseCheckpoint(JSON.stringify({ ...base, pendingToolCalls }))).toEqual({
      ...base,
      waitpoint: { requests: calls },
    });
    expect(parseCheckpoint(JSON.stringify(base))).toEqual(base);
  });

  it('is stored with those fields beside it too, for a worker of the previous release', () => {
    const base = initialCheckpoint({ systemPrompt: 'system', input: 'hi' });
    const { kind: _c, requestId: _r, ...pendingDelegation } = children;
    const { kind: _q, ...pendingClarify } = question;
    const pendingToolCalls = calls.map(({ kind: _t, ...call }) => call);
    const raw = (requests: (typeof children | typeof question | (typeof calls)[0])[]) =>
      JSON.parse(storedCheckpoint({ ...base, waitpoint: { requests } }));
    expect(raw([children])).toMatchObject({ pendingDelegation });
    expect(raw([question])).toMatchObject({ pendingClarify });
    expect(raw(calls)).toMatchObject({ pendingToolCalls });
    expect(raw(calls)).not.toHaveProperty('pendingClarify');
    expect(JSON.parse(storedCheckpoint(base))).not.toHaveProperty('pendingToolCalls');
  });
});
