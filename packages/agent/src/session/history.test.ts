import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../providers/model-provider.js';
import { DEFAULT_SESSION_HISTORY_TOKENS, historyMessages } from './history.js';
import { messageTokens } from './tokens.js';
import {
  INTERRUPTED_TOOL_RESULT,
  shortenToolResult,
  type TranscriptEntry,
  turnEntries,
} from './transcript.js';

const CUT_NOTE = 'characters cut from this tool result';
const at = '2030-01-01T00:00:00.000Z';

/** One run's turn: its input, a tool call per result given, then the final answer. */
function turn(n: number, results: string[], answer = `Answer ${n}.`): ChatMessage[] {
  const calls = results.map((_, i) => ({
    id: `c${n}_${i}`,
    name: 'bash',
    arguments: `{"command":"step ${i}"}`,
  }));
  return [
    { role: 'user', content: `Question number ${n}?` },
    ...(calls.length > 0 ? [{ role: 'assistant' as const, content: '', toolCalls: calls }] : []),
    ...results.map((content, i) => ({ role: 'tool' as const, toolCallId: `c${n}_${i}`, content })),
    { role: 'assistant', content: answer },
  ];
}

function transcript(turns: ChatMessage[][]): TranscriptEntry[] {
  return turns.flatMap((messages, n) => turnEntries(messages, { runId: `run_${n}`, at }));
}

/** Output text of `lines` numbered lines: about 7 tokens a line. */
function output(tag: string, lines: number): string {
  return Array.from({ length: lines }, (_, i) => `${tag} line ${i}: value=${i * 7}`).join('\n');
}

const sum = (messages: ChatMessage[]) =>
  messages.reduce((total, message) => total + messageTokens(message), 0);

/** Fails unless every call is followed by exactly one result for it, and every result follows its call. */
function expectPaired(messages: ChatMessage[]) {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as ChatMessage;
    if (message.role === 'tool')
      throw new Error(`message ${i}: a tool result without its call (${message.toolCallId})`);
    if (message.role !== 'assistant' || !message.toolCalls?.length) continue;
    const answered: string[] = [];
    while (messages[i + 1]?.role === 'tool') {
      i++;
      answered.push((messages[i] as { toolCallId: string }).toolCallId);
    }
    expect(answered.toSorted()).toEqual(message.toolCalls.map((call) => call.id).toSorted());
  }
}

describe('historyMessages', () => {
  it('gives the whole transcript, in order, when it fits', () => {
    const turns = [turn(0, ['a.txt']), turn(1, []), turn(2, [output('x', 10), 'ok'])];
    const window = historyMessages(transcript(turns), DEFAULT_SESSION_HISTORY_TOKENS);
    expect(window.truncated).toBeUndefined();
    expect(window.messages).toEqual(turns.flat());
  });

  it('pairs every call with one result: dangling calls get the interrupted one, stray results are left out', () => {
    const entries: TranscriptEntry[] = [
      { role: 'tool', content: 'before anything', toolCallId: 'zz', runId: 'r', at },
      { role: 'user', content: 'go', runId: 'r', at },
      { role: 'tool', content: 'a result without a call', toolCallId: 'a', runId: 'r', at },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 'bash', arguments: '{}' },
          { id: 'b', name: 'bash', arguments: '{}' },
          { id: 'c', name: 'bash', arguments: '{}' },
        ],
        runId: 'r',
        at,
      },
      { role: 'tool', content: 'b done', toolCallId: 'b', runId: 'r', at },
      { role: 'tool', content: 'b again', toolCallId: 'b', runId: 'r', at },
      { role: 'tool', content: 'someone else', toolCallId: 'q', runId: 'r', at },
      { role: 'user', content: 'next', runId: 'r2', at },
      { role: 'tool', content: 'c, too late', toolCallId: 'c', runId: 'r2', at },
    ];
    const { messages, truncated } = historyMessages(entries, DEFAULT_SESSION_HISTORY_TOKENS);
    expect(truncated).toBeUndefined();
    expect(messages).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', toolCalls: entries[3]?.toolCalls },
      { role: 'tool', toolCallId: 'b', content: 'b done' },
      { role: 'tool', toolCallId: 'a', content: INTERRUPTED_TOOL_RESULT },
      { role: 'tool', toolCallId: 'c', content: INTERRUPTED_TOOL_RESULT },
      { role: 'user', content: 'next' },
    ]);
    expectPaired(messages);
  });

  it("shortens old tool results, the oldest first, before dropping a turn, and never the last turn's", () => {
    const turns = [0, 1, 2, 3].map((n) => turn(n, [output(`t${n}`, 120)]));
    const entries = transcript(turns);
    const whole = sum(turns.flat());
    const saving = (entries[2]?.tokens ?? 0) - (entries[2]?.shortenedTokens ?? 0);
    expect(saving).toBeGreaterThan(500);

    // Over by less than one result's saving: the oldest result alone is shortened.
    const one = historyMessages(entries, whole - saving + 1);
    expect(one.truncated).toEqual({
      droppedTurns: 0,
      droppedEntries: 0,
      shortenedToolResults: 1,
      tokensBefore: whole,
      tokensAfter: whole - saving,
      budget: whole - saving + 1,
    });
    const tools = (messages: ChatMessage[]) =>
      messages.filter((m) => m.role === 'tool').map((m) => m.content);
    const [first, ...rest] = tools(one.messages);
    expect(first).toContain(CUT_NOTE);
    expect(first?.length).toBeLessThan(600);
    expect(rest).toEqual(tools(turns.slice(1).flat()));

    // Over by more than all three old results save: they are all shortened, and then a turn must go.
    const all = historyMessages(entries, whole - 3 * saving - 10);
    expect(all.truncated?.droppedTurns).toBe(1);
    const allTools = tools(all.messages);
    expect(allTools.slice(0, 2).every((content) => content.includes(CUT_NOTE))).toBe(true);
    expect(allTools[2]).toBe(output('t3', 120));
  });

  it('stops shortening within a turn as soon as the history fits', () => {
    const turns = [turn(0, [output('a', 120), output('b', 120), output('c', 120)]), turn(1, ['ok'])];
    const entries = transcript(turns);
    const whole = sum(turns.flat());
    const { messages, truncated } = historyMessages(entries, whole - 10);
    expect(truncated?.shortenedToolResults).toBe(1);
    expect(messages.slice(3, 5)).toEqual((turns[0] as ChatMessage[]).slice(3, 5));
  });

  it('drops whole turns from the oldest end, as few as fit, and keeps the pairs', () => {
    const turns = Array.from({ length: 10 }, (_, n) => turn(n, [output(`t${n}`, 60), `small ${n}`]));
    const entries = transcript(turns);
    const perTurn = sum(turns[0] as ChatMessage[]);
    const { messages, truncated } = historyMessages(entries, perTurn * 3);
    expect(truncated?.droppedTurns).toBeGreaterThan(0);
    const kept = 10 - (truncated?.droppedTurns ?? 0);
    // The kept turns start at a user message and end with the last turn, unshortened.
    expect(messages[0]).toEqual({ role: 'user', content: `Question number ${10 - kept}?` });
    expect(messages.slice(-4)).toEqual((turns[9] as ChatMessage[]).slice(-4));
    expect(truncated?.droppedEntries).toBe(
      entries.filter((e) => Number(e.runId.slice(4)) < 10 - kept).length,
    );
    expect(truncated?.tokensAfter).toBe(sum(messages));
    expect(truncated?.tokensAfter).toBeLessThanOrEqual(perTurn * 3);
    expectPaired(messages);
    // One turn fewer dropped would not fit, even with every old result shortened.
    const oneMore = historyMessages(
      entries.filter((e) => Number(e.runId.slice(4)) >= 9 - kept),
      1e9,
    ).messages;
    const fullyShortened =
      sum(oneMore) - kept * ((entries[2]?.tokens ?? 0) - (entries[2]?.shortenedTokens ?? 0));
    expect(fullyShortened).toBeGreaterThan(perTurn * 3);
  });

  it('keeps the last turn whole when it alone is over budget, and says so', () => {
    const turns = [turn(0, ['a']), turn(1, [output('big', 300)])];
    const { messages, truncated } = historyMessages(transcript(turns), 50);
    expect(messages).toEqual(turns[1]);
    expect(truncated).toMatchObject({
      droppedTurns: 1,
      droppedEntries: 4,
      shortenedToolResults: 0,
      budget: 50,
    });
    expect(truncated?.tokensAfter).toBe(sum(turns[1] as ChatMessage[]));
  });

  it('counts entries stored without counts, Chinese text included, as the stored counts would', () => {
    const zh = (n: number) => `第${n}轮：请检查配置文件并解释每一个字段的含义。`.repeat(n === 0 ? 40 : 5);
    const turns = [0, 1, 2, 3, 4].map((n) => turn(n, [zh(n === 0 ? 0 : n)], `好的，第${n}轮完成。`));
    const entries = transcript(turns);
    const bare = entries.map(({ tokens: _t, shortenedTokens: _s, ...entry }) => entry);
    const whole = sum(turns.flat());
    // Characters would count the Chinese turns at about twice their o200k tokens.
    expect(whole).toBeLessThan(turns.flat().reduce((n, m) => n + m.content.length, 0));
    for (const budget of [whole, whole - 100, Math.floor(whole / 2), 10]) {
      expect(historyMessages(bare, budget)).toEqual(historyMessages(entries, budget));
    }
    const { truncated } = historyMessages(bare, whole - 100);
    expect(truncated).toMatchObject({ droppedTurns: 0, shortenedToolResults: 1, tokensBefore: whole });
  });

  it('refuses a budget that is not a number of tokens', () => {
    expect(() => historyMessages([], -1)).toThrow(/budgetTokens/);
    expect(() => historyMessages([], Number.NaN)).toThrow(/budgetTokens/);
  });

  it('keeps its invariants for any transcript and budget', () => {
    const contentArb = fc.oneof(
      fc.constantFrom('ok', 'done', '', '完成'),
      fc.integer({ min: 1, max: 90 }).map((lines) => output('o', lines)),
    );
    const turnArb = fc.record({
      calls: fc.array(fc.record({ result: fc.option(contentArb, { nil: undefined }) }), { maxLength: 3 }),
      answer: fc.option(fc.constantFrom('Done.', 'Here is what I found.'), { nil: undefined }),
    });
    fc.assert(
      fc.property(
        fc.array(turnArb, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 6000 }),
        (shapes, budget) => {
          const entries = shapes.flatMap((shape, n) => {
            const calls = shape.calls.map((_, i) => ({ id: `c${n}_${i}`, name: 'bash', arguments: '{}' }));
            const messages: ChatMessage[] = [{ role: 'user', content: `Question ${n}` }];
            if (calls.length > 0) messages.push({ role: 'assistant', content: '', toolCalls: calls });
            shape.calls.forEach((call, i) => {
              if (call.result !== undefined)
                messages.push({ role: 'tool', toolCallId: `c${n}_${i}`, content: call.result });
            });
            if (shape.answer !== undefined) messages.push({ role: 'assistant', content: shape.answer });
            return turnEntries(messages, { runId: `run_${n}`, at });
          });
          const full = historyMessages(entries, Number.MAX_SAFE_INTEGER).messages;
          const { messages, truncated } = historyMessages(entries, budget);
          expectPaired(messages);
          if (truncated === undefined) {
            expect(messages).toEqual(full);
            expect(sum(messages)).toBeLessThanOrEqual(budget);
            return;
          }
          expect(truncated.tokensBefore).toBe(sum(full));
          expect(truncated.tokensBefore).toBeGreaterThan(budget);
          expect(truncated.tokensAfter).toBe(sum(messages));
          // Under budget, unless only the last turn is left.
          if (truncated.droppedTurns < shapes.length - 1)
            expect(truncated.tokensAfter).toBeLessThanOrEqual(budget);
          // The kept turns are the newest, from a user message on, with as many entries dropped as they held.
          const kept = entries.filter((e) => Number(e.runId.slice(4)) >= truncated.droppedTurns);
          expect(truncated.droppedEntries).toBe(entries.length - kept.length);
          const keptFull = historyMessages(kept, Number.MAX_SAFE_INTEGER).messages;
          expect(messages.length).toBe(keptFull.length);
          // Each message is as it was or, for the shortened results, cut: the oldest ones, never in the last turn.
          const lastTurnStart = keptFull.findLastIndex((m) => m.role === 'user');
          let shortened = 0;
          let sawWhole = false;
          messages.forEach((message, i) => {
            const original = keptFull[i] as ChatMessage;
            if (message.content === original.content) {
              if (message.role === 'tool' && message.content.length > 500) sawWhole = true;
              expect(message).toEqual(original);
              return;
            }
            expect(message.role).toBe('tool');
            expect(message.content).toContain(CUT_NOTE);
            expect(i).toBeLessThan(lastTurnStart);
            expect(sawWhole).toBe(false);
            shortened++;
          });
          expect(truncated.shortenedToolResults).toBe(shortened);
          // As little as fits: one result fewer shortened would not fit, nor one turn more kept with every
          // old result shortened.
          const newestShortened = messages.findLastIndex((m, i) => m.content !== keptFull[i]?.content);
          if (newestShortened !== -1) {
            const restored = messageTokens(keptFull[newestShortened] as ChatMessage);
            const cut = messageTokens(messages[newestShortened] as ChatMessage);
            expect(truncated.tokensAfter - cut + restored).toBeGreaterThan(budget);
          }
          if (truncated.droppedTurns > 0) {
            const oneMore = entries.filter((e) => Number(e.runId.slice(4)) >= truncated.droppedTurns - 1);
            const oneMoreFull = historyMessages(oneMore, Number.MAX_SAFE_INTEGER).messages;
            const lastStart = oneMoreFull.findLastIndex((m) => m.role === 'user');
            const floor = oneMoreFull.reduce((total, m, i) => {
              const short =
                m.role === 'tool' && i < lastStart && m.content.length > 500
                  ? Math.min(messageTokens(m), messageTokens({ ...m, content: shortenToolResult(m.content) }))
                  : messageTokens(m);
              return total + short;
            }, 0);
            expect(floor).toBeGreaterThan(budget);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
