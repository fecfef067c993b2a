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

describe('a pending delegation', () => {
  it('is stored and read back with the checkpoint, a session run included', () => {
    const pendingDelegation = {
      callId: 'call_1',
      name: 'delegate_parallel' as const,
      tasks: [
        { goal: 'a', context: 'ctx', toolsets: ['base'], childRunId: 'run_child_a' },
        { goal: 'b', childRunId: 'run_child_b' },
      ],
    };
    const alone = { ...initialCheckpoint({ systemPrompt: 'system', input: 'hi' }), pendingDelegation };
    expect(parseCheckpoint(storedCheckpoint(alone)).pendingDelegation).toEqual(pendingDelegation);
    const session = {
      ...initialCheckpoint({
        systemPrompt: 'system',
        input: 'hi',
        history,
        historyRef: { entries: 4, budget: 1 },
      }),
      pendingDelegation,
    };
    const loaded = restoreHistory(parseCheckpoint(storedCheckpoint(session)), history);
    expect(loaded).toEqual(session);
  });
});
