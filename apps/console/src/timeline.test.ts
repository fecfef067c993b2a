import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { EMPTY_TIMELINE, foldEvents } from './timeline.js';

let seq = 0;
function event(type: RunEvent['type'], data: unknown): RunEvent {
  seq++;
  return { id: `1000-${seq}`, runId: 'run_x', type, at: '2026-11-30T12:00:00.000Z', data } as RunEvent;
}

describe('foldEvents', () => {
  it('streams assistant text into one item, which the message then replaces', () => {
    const deltas = [event('message.delta', { text: 'Hel' }), event('message.delta', { text: 'lo' })];
    const streaming = foldEvents(EMPTY_TIMELINE, deltas);
    expect(streaming.items).toMatchObject([{ kind: 'text', text: 'Hello', streaming: true }]);
    const done = foldEvents(streaming, [
      event('message', { role: 'assistant', content: 'Hello!', toolCalls: [] }),
    ]);
    expect(done.items).toMatchObject([{ kind: 'text', text: 'Hello!', streaming: false }]);
  });

  it("ends the streamed text with the message that follows the turn's usage, as the worker emits them", () => {
    const timeline = foldEvents(EMPTY_TIMELINE, [
      event('message.delta', { text: 'All done' }),
      event('usage', { inputTokens: 10, outputTokens: 2, totalTokens: 12 }),
      event('message', { role: 'assistant', content: 'All done.', toolCalls: [] }),
    ]);
    expect(timeline.items).toMatchObject([
      { kind: 'text', text: 'All done.', streaming: false },
      { kind: 'usage' },
    ]);
  });

  it('collects a tool call’s output chunks and result by call id', () => {
    const timeline = foldEvents(EMPTY_TIMELINE, [
      event('tool.call', { callId: 'c1', name: 'bash', arguments: '{"command":"ls"}' }),
      event('tool.call', { callId: 'c2', name: 'read', arguments: '{}' }),
      event('tool.output', { callId: 'c1', stream: 'stdout', chunk: 'a\n' }),
      event('tool.output', { callId: 'c1', stream: 'stdout', chunk: 'b\n' }),
      event('tool.result', { callId: 'c1', name: 'bash', ok: true, content: 'exit 0' }),
    ]);
    expect(timeline.items).toMatchObject([
      { kind: 'tool', callId: 'c1', output: 'a\nb\n', result: { ok: true, content: 'exit 0' } },
      { kind: 'tool', callId: 'c2', output: '' },
    ]);
    expect(timeline.items[1]).not.toHaveProperty('result');
  });

  it('marks a question answered or timed out', () => {
    const timeline = foldEvents(EMPTY_TIMELINE, [
      event('clarify.requested', { requestId: 'q1', question: 'Which?', choices: [], expiresAt: 'x' }),
      event('clarify.answered', { requestId: 'q1', answer: 'this' }),
      event('clarify.requested', { requestId: 'q2', question: 'And?', choices: [], expiresAt: 'x' }),
      event('clarify.timed_out', { requestId: 'q2' }),
    ]);
    expect(timeline.items).toMatchObject([
      { kind: 'question', question: 'Which?', outcome: { answer: 'this' } },
      { kind: 'question', question: 'And?', outcome: { timedOut: true } },
    ]);
  });

  it("folds a turn's held calls into one batch each, with the decision, who took it and what with", () => {
    const timeline = foldEvents(EMPTY_TIMELINE, [
      event('approval.requested', held('apr_1', 'write_file', { path: 'a.md', content: 'hi' })),
      event('approval.requested', held('apr_2', 'bash', { command: 'rm -rf build' })),
      event('approval.resolved', { requestId: 'apr_2', decision: 'reject', by: 'acme', message: 'not that' }),
      event('approval.resolved', {
        requestId: 'apr_1',
        decision: 'edit',
        by: 'acme',
        arguments: { path: 'a.md', content: 'hello' },
      }),
      event('attempt.started', { attempt: 1, resumed: true, step: 1 }),
      event('approval.requested', held('apr_3', 'write_file', { path: 'b.md', content: '' })),
      event('approval.resolved', { requestId: 'apr_3', decision: 'reject', by: 'timeout', timedOut: true }),
    ]);
    const approvals = timeline.items.filter((item) => item.kind === 'approval');
    expect(approvals).toMatchObject([
      {
        approval: { requestId: 'apr_1', tool: 'write_file' },
        decision: { decision: 'edit', by: 'acme', arguments: { path: 'a.md', content: 'hello' } },
      },
      {
        approval: { requestId: 'apr_2', tool: 'bash' },
        decision: { decision: 'reject', message: 'not that' },
      },
      { approval: { requestId: 'apr_3' }, decision: { decision: 'reject', by: 'timeout', timedOut: true } },
    ]);
    // The first two were asked together; the third by a later turn.
    const [first, second, third] = approvals as Extract<(typeof approvals)[number], { kind: 'approval' }>[];
    expect(second?.batch).toBe(first?.batch);
    expect(third?.batch).not.toBe(first?.batch);
  });

  it('folds a message sent to the live run: pending, then taken at the turn after those ended, or lost when the run ends', () => {
    const answer = (content: string) => event('message', { role: 'assistant', content, toolCalls: [] });
    const events = [
      event('attempt.started', { attempt: 1, resumed: false, step: 0 }),
      answer(''),
      event('message.received', { messageId: 'msg_1', content: 'Keep it short.\nAnd blue.' }),
      event('message.received', { messageId: 'msg_2', content: 'Also red.' }),
      // Resumed after its question: its checkpoint says one turn has ended.
      event('attempt.started', { attempt: 1, resumed: true, step: 1 }),
      event('message.delivered', { messageId: 'msg_1' }),
      event('message.delivered', { messageId: 'msg_2' }),
      answer('Blue, short.'),
      event('message.received', { messageId: 'msg_3', content: 'Too late' }),
      event('message.undelivered', { messageId: 'msg_3' }),
      event('run.completed', { output: 'Blue, short.' }),
    ];
    const waiting = foldEvents(EMPTY_TIMELINE, events.slice(0, 4));
    expect(waiting.items.filter((item) => item.kind === 'user')).toMatchObject([
      { messageId: 'msg_1', content: 'Keep it short.\nAnd blue.', delivery: { state: 'pending' } },
      { messageId: 'msg_2', delivery: { state: 'pending' } },
    ]);
    // Folded in two parts or at once, each message is one item, in the order sent.
    for (const timeline of [foldEvents(waiting, events), foldEvents(EMPTY_TIMELINE, events)]) {
      expect(timeline.items.filter((item) => item.kind === 'user')).toMatchObject([
        { messageId: 'msg_1', delivery: { state: 'delivered', turn: 2 } },
        { messageId: 'msg_2', delivery: { state: 'delivered', turn: 2 } },
        { messageId: 'msg_3', delivery: { state: 'undelivered' } },
      ]);
      expect(timeline.turns).toBe(2);
    }
  });

  it("counts turns from each attempt's step: a retried attempt starts again from its checkpoint", () => {
    const timeline = foldEvents(EMPTY_TIMELINE, [
      event('attempt.started', { attempt: 2, resumed: false, step: 3 }),
      event('message.received', { messageId: 'msg_1', content: 'go on' }),
      event('message.delivered', { messageId: 'msg_1' }),
      // A delivery for a message this timeline never saw received changes nothing.
      event('message.delivered', { messageId: 'msg_unknown' }),
    ]);
    expect(timeline.items.filter((item) => item.kind === 'user')).toMatchObject([
      { messageId: 'msg_1', delivery: { state: 'delivered', turn: 4 } },
    ]);
  });

  it('folds each event once: events at or before the last one folded are skipped', () => {
    const first = [event('run.started', { attempt: 1, workerId: 'w' }), event('usage', usage(5))];
    const once = foldEvents(EMPTY_TIMELINE, first);
    const again = foldEvents(once, [...first, event('run.completed', { output: 'ok' })]);
    expect(again.items.map((item) => item.kind)).toEqual(['status', 'usage', 'status']);
    expect(again.lastEventId).toBe(`1000-${seq}`);
    // Ids compare as numbers, not strings: 1000-10 comes after 1000-9.
    const nine = { ...event('run.queued', {}), id: '2000-9' } as RunEvent;
    const ten = { ...event('run.queued', {}), id: '2000-10' } as RunEvent;
    expect(foldEvents(foldEvents(EMPTY_TIMELINE, [nine]), [ten]).items).toHaveLength(2);
  });

  it('says how a call without a result was stopped: by a cancel, a failed attempt, or a lost worker', () => {
    const call = (callId: string) => event('tool.call', { callId, name: 'bash', arguments: '{}' });
    const cancelled = foldEvents(EMPTY_TIMELINE, [
      event('attempt.started', { attempt: 1, resumed: false, step: 0 }),
      call('c1'),
      event('tool.result', { callId: 'c1', name: 'bash', ok: true, content: 'exit 0' }),
      call('c2'),
      event('run.cancelled', {}),
    ]);
    expect(cancelled.items.filter((item) => item.kind === 'tool')).toMatchObject([
      { callId: 'c1', result: { ok: true } },
      { callId: 'c2', stopped: 'cancel' },
    ]);
    expect(cancelled.items[0]).not.toHaveProperty('stopped');

    // A worker lost: the next attempt (a higher number) re-runs the call under the same id.
    const lost = foldEvents(EMPTY_TIMELINE, [
      event('attempt.started', { attempt: 1, resumed: false, step: 0 }),
      call('c1'),
      event('attempt.started', { attempt: 2, resumed: true, step: 0 }),
      call('c1'),
      event('tool.result', { callId: 'c1', name: 'bash', ok: true, content: 'exit 0' }),
    ]);
    expect(lost.items.filter((item) => item.kind === 'tool')).toMatchObject([
      { callId: 'c1', attempt: 1, stopped: 'lost' },
      { callId: 'c1', attempt: 2, result: { ok: true } },
    ]);
    expect(lost.items.at(-1)).not.toHaveProperty('stopped');

    // A resumed attempt keeps its number: the question's call gets its result, nothing is stopped.
    const resumed = foldEvents(EMPTY_TIMELINE, [
      event('attempt.started', { attempt: 1, resumed: false, step: 0 }),
      event('tool.call', { callId: 'q', name: 'clarify', arguments: '{}' }),
      event('attempt.started', { attempt: 1, resumed: true, step: 1 }),
      event('tool.result', { callId: 'q', name: 'clarify', ok: true, content: 'red' }),
    ]);
    expect(resumed.items.find((item) => item.kind === 'tool')).toMatchObject({ result: { ok: true } });
    expect(resumed.items.find((item) => item.kind === 'tool')).not.toHaveProperty('stopped');

    const retried = foldEvents(EMPTY_TIMELINE, [
      call('c1'),
      event('run.retrying', { attempt: 2, delayMs: 1000, error: { code: 'ERR_X', message: 'x' } }),
      event('run.failed', { error: { code: 'ERR_X', message: 'x' } }),
    ]);
    expect(retried.items[0]).toMatchObject({ kind: 'tool', stopped: 'failure' });
  });
});

function usage(total: number) {
  return { inputTokens: total, outputTokens: 0, totalTokens: total };
}

/** The data of an `approval.requested` for a call of `tool`. */
function held(requestId: string, tool: string, args: Record<string, unknown>) {
  return {
    requestId,
    callId: `call_${requestId}`,
    tool,
    arguments: args,
    reason: `tools: ${tool}`,
    expiresAt: '2026-11-30T13:00:00.000Z',
    onTimeout: 'reject',
  };
}
