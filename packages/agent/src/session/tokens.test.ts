import { describe, expect, it } from 'vitest';
import { countTokens, MESSAGE_OVERHEAD_TOKENS, messageTokens, TOOL_CALL_OVERHEAD_TOKENS } from './tokens.js';

describe('countTokens', () => {
  it('counts with the o200k_base encoding', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('Hello, world! Today we discuss windowing the session history.')).toBe(13);
  });

  it('counts Chinese text by its tokens, not by its characters or words', () => {
    // 21 characters and no spaces: o200k_base reads them as 14 tokens (cl100k_base would say 24).
    expect(countTokens('你好，世界！今天我们来讨论会话历史的窗口。')).toBe(14);
  });

  it('counts text that looks like a special token as plain text instead of refusing it', () => {
    expect(countTokens('a <|endoftext|> b')).toBeGreaterThan(countTokens('a  b'));
  });
});

describe('messageTokens', () => {
  it('adds the per-message overhead to the text', () => {
    expect(messageTokens({ role: 'user', content: 'hello world' })).toBe(MESSAGE_OVERHEAD_TOKENS + 2);
  });

  it("counts an assistant's tool calls and a result's call id", () => {
    const call = { id: 'call_1', name: 'bash', arguments: '{"command":"ls -la"}' };
    expect(messageTokens({ role: 'assistant', content: '', toolCalls: [call] })).toBe(
      MESSAGE_OVERHEAD_TOKENS +
        TOOL_CALL_OVERHEAD_TOKENS +
        countTokens(call.id) +
        countTokens(call.name) +
        countTokens(call.arguments),
    );
    expect(messageTokens({ role: 'tool', content: 'ok', toolCallId: 'call_1' })).toBe(
      MESSAGE_OVERHEAD_TOKENS + countTokens('ok') + countTokens('call_1'),
    );
  });
});
