import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../providers/model-provider.js';
import { messageTokens } from './tokens.js';
import {
  CANCELLED_TOOL_RESULT,
  INTERRUPTED_TOOL_RESULT,
  SHORTENED_TOOL_RESULT_CHARS,
  shortenToolResult,
  turnEntries,
} from './transcript.js';

const opts = { runId: 'run_1', at: '2030-01-01T00:00:00.000Z' };
const call = (id: string, name = 'bash') => ({ id, name, arguments: `{"n":"${id}"}` });

describe('turnEntries', () => {
  it("keeps the run's messages from the user input on, never a system message, each counted", () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a test agent.' },
      { role: 'assistant', content: 'history before the input' },
      { role: 'user', content: 'list the files' },
      { role: 'assistant', content: '', toolCalls: [call('c1', 'list_dir')] },
      { role: 'tool', toolCallId: 'c1', content: 'a.txt\nb.txt' },
      { role: 'system', content: 'a late system note' },
      { role: 'assistant', content: 'Two files: a.txt and b.txt.' },
    ];
    const entries = turnEntries(messages, opts);
    expect(entries).toEqual([
      { role: 'user', content: 'list the files', ...opts, tokens: messageTokens(messages[2] as ChatMessage) },
      {
        role: 'assistant',
        content: '',
        toolCalls: [call('c1', 'list_dir')],
        ...opts,
        tokens: messageTokens(messages[3] as ChatMessage),
      },
      {
        role: 'tool',
        content: 'a.txt\nb.txt',
        toolCallId: 'c1',
        name: 'list_dir',
        ...opts,
        tokens: messageTokens(messages[4] as ChatMessage),
      },
      {
        role: 'assistant',
        content: 'Two files: a.txt and b.txt.',
        ...opts,
        tokens: messageTokens(messages[6] as ChatMessage),
      },
    ]);
  });

  it('gives each call without a result an interrupted one, after the results its turn has', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', toolCalls: [call('a'), call('b', 'read_file'), call('c')] },
      { role: 'tool', toolCallId: 'b', content: 'b done' },
      { role: 'assistant', content: 'next', toolCalls: [call('d')] },
    ];
    const entries = turnEntries(messages, opts);
    expect(entries.map((e) => [e.role, e.toolCallId, e.name, e.content])).toEqual([
      ['user', undefined, undefined, 'go'],
      ['assistant', undefined, undefined, ''],
      ['tool', 'b', 'read_file', 'b done'],
      ['tool', 'a', 'bash', INTERRUPTED_TOOL_RESULT],
      ['tool', 'c', 'bash', INTERRUPTED_TOOL_RESULT],
      ['assistant', undefined, undefined, 'next'],
      ['tool', 'd', 'bash', INTERRUPTED_TOOL_RESULT],
    ]);
    const synthetic = entries[3];
    expect(synthetic?.tokens).toBe(
      messageTokens({ role: 'tool', content: INTERRUPTED_TOOL_RESULT, toolCallId: 'a' }),
    );
  });

  it("says a stopped run's unanswered calls were stopped", () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'ask me' },
      { role: 'assistant', content: '', toolCalls: [call('q', 'clarify')] },
    ];
    const entries = turnEntries(messages, { ...opts, interrupted: true });
    expect(entries.at(-1)).toMatchObject({
      role: 'tool',
      toolCallId: 'q',
      name: 'clarify',
      content: CANCELLED_TOOL_RESULT,
    });
  });

  it('counts the shortened form of a long tool result once, with the entry', () => {
    const long = 'line of output\n'.repeat(200);
    const messages: ChatMessage[] = [
      { role: 'user', content: 'run it' },
      { role: 'assistant', content: '', toolCalls: [call('x')] },
      { role: 'tool', toolCallId: 'x', content: long },
      { role: 'tool', toolCallId: 'y', content: 'short' },
    ];
    const [, , result, short] = turnEntries(messages, opts);
    expect(long.length).toBeGreaterThan(SHORTENED_TOOL_RESULT_CHARS);
    expect(result?.shortenedTokens).toBe(
      messageTokens({ role: 'tool', content: shortenToolResult(long), toolCallId: 'x' }),
    );
    expect(result?.shortenedTokens).toBeLessThan(result?.tokens ?? 0);
    expect(short).not.toHaveProperty('shortenedTokens');
  });

  it('counts each message object once: later calls reuse the count', () => {
    const input: ChatMessage = { role: 'user', content: 'one two three' };
    const messages: ChatMessage[] = [input];
    const [first] = turnEntries(messages, opts);
    // The same object, changed after it was counted: the cached count stands, so it was not counted again.
    input.content = 'one two three four five six seven eight nine ten';
    messages.push({ role: 'assistant', content: 'done' });
    const again = turnEntries(messages, opts);
    expect(again[0]?.tokens).toBe(first?.tokens);
    expect(again[1]?.tokens).toBe(messageTokens({ role: 'assistant', content: 'done' }));
    // A new object with the same text is counted afresh.
    const fresh = turnEntries([{ role: 'user', content: input.content }], opts);
    expect(fresh[0]?.tokens).toBeGreaterThan(first?.tokens ?? 0);
  });

  it('returns nothing for messages without a user input', () => {
    expect(turnEntries([{ role: 'system', content: 'sys' }], opts)).toEqual([]);
  });
});
