import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../providers/model-provider.js';
import {
  initialCheckpoint,
  ownMessages,
  parseCheckpoint,
  readCheckpoint,
  restoreHistory,
  sharedPromptRef,
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

  it('is stored as the waitpoint alone (the fields of before it are read, no longer written)', () => {
    const base = initialCheckpoint({ systemPrompt: 'system', input: 'hi' });
    for (const requests of [[children], [question], calls]) {
      const raw = JSON.parse(storedCheckpoint({ ...base, waitpoint: { requests } }));
      expect(raw.waitpoint).toEqual({ requests });
      expect(Object.keys(raw).filter((key) => key.startsWith('pending'))).toEqual([]);
    }
  });
});

describe("the system prompt's shared part", () => {
  const rules = `# Tool use\n${'Act through tools. '.repeat(60)}`;
  const prompt = `You are Tether.\n\n# Workspace\n/ws/run_1\n\n${rules}\n\n# Memory\nmine`;
  const shared = { at: prompt.indexOf(rules), text: rules };
  const kept = new Map([[sharedPromptRef(rules), rules]]);
  const lookup = async (ref: string) => kept.get(ref);

  it('is left out of the stored checkpoint, named by its hash, and comes back in place', async () => {
    const checkpoint = initialCheckpoint({ systemPrompt: prompt, input: 'hi', shared });
    expect(checkpoint.shared).toEqual({ ref: sharedPromptRef(rules), at: shared.at, text: rules });
    checkpoint.messages.push({ role: 'assistant', content: 'done' });
    const stored = storedCheckpoint(checkpoint);
    expect(stored).not.toContain('Act through tools');
    expect(JSON.parse(stored)).toMatchObject({
      version: 2,
      shared: { ref: sharedPromptRef(rules), at: shared.at },
    });
    expect(stored.length).toBeLessThan(prompt.length - rules.length + 300);
    const loaded = await readCheckpoint(stored, lookup);
    expect(loaded).toEqual(checkpoint);
    expect(loaded.messages[0]?.content).toBe(prompt);
    // Stored again as it was.
    expect(storedCheckpoint(loaded)).toBe(stored);
  });

  it("is one hash for every run with the same part, whatever each run's own text around it", () => {
    const other = `You are Tether.\n\n# Workspace\n/ws/run_2\n\n${rules}`;
    const a = initialCheckpoint({ systemPrompt: prompt, input: 'a', shared });
    const b = initialCheckpoint({
      systemPrompt: other,
      input: 'b',
      shared: { at: other.indexOf(rules), text: rules },
    });
    expect(a.shared?.ref).toBe(b.shared?.ref);
    expect(a.shared?.ref).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('is kept in the checkpoint when short, or when it is not where it was said to be', () => {
    const short = initialCheckpoint({
      systemPrompt: 'a\n\nrules',
      input: 'hi',
      shared: { at: 3, text: 'rules' },
    });
    expect(short.shared).toBeUndefined();
    const moved = initialCheckpoint({ systemPrompt: prompt, input: 'hi', shared: { at: 1, text: rules } });
    expect(moved.shared).toBeUndefined();
    // A system prompt rewritten after the start is stored whole (version 1).
    const checkpoint = initialCheckpoint({ systemPrompt: prompt, input: 'hi', shared });
    (checkpoint.messages[0] as { content: string }).content = 'rewritten';
    expect(parseCheckpoint(storedCheckpoint(checkpoint)).messages[0]?.content).toBe('rewritten');
  });

  it('is required to read a checkpoint that refers to it: a clear error without it', async () => {
    const stored = storedCheckpoint(initialCheckpoint({ systemPrompt: prompt, input: 'hi', shared }));
    expect(() => parseCheckpoint(stored)).toThrow(/shared part/);
    await expect(readCheckpoint(stored, async () => undefined)).rejects.toMatchObject({
      code: 'ERR_AGENT_CHECKPOINT_INVALID',
    });
    // A version 2 checkpoint without its reference, or a reference out of place, is refused.
    const raw = JSON.parse(stored);
    await expect(readCheckpoint(JSON.stringify({ ...raw, shared: undefined }), lookup)).rejects.toThrow(
      /version 1 or 2/,
    );
    await expect(
      readCheckpoint(JSON.stringify({ ...raw, shared: { ref: raw.shared.ref, at: 10_000 } }), lookup),
    ).rejects.toThrow(/not there/);
    await expect(readCheckpoint(JSON.stringify({ ...raw, version: 1 }), lookup)).rejects.toThrow(
      /version 1 or 2/,
    );
  });

  it('reads a version 1 checkpoint (stored before it) as it was', async () => {
    const before = initialCheckpoint({ systemPrompt: prompt, input: 'hi' });
    const json = JSON.stringify(before);
    expect(await readCheckpoint(json, lookup)).toEqual(before);
  });
});
