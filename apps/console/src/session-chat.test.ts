import type { RunEvent, TranscriptEntryView } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { chatBlocks, EMPTY_CHAT, foldSessionEvents, returnedQuestion, userMessages } from './session-chat.js';

const seqs = new Map<string, number>();
/** An event of run `runId` as the session's stream carries it: id `<runId>:<eventId>`. */
function event(runId: string, type: RunEvent['type'], data: unknown): RunEvent {
  const seq = (seqs.get(runId) ?? 0) + 1;
  seqs.set(runId, seq);
  return { id: `${runId}:1000-${seq}`, runId, type, at: '2026-11-30T12:00:00.000Z', data } as RunEvent;
}

const ask = (runId: string, args: unknown) => [
  event(runId, 'tool.call', { callId: 'c1', name: 'clarify', arguments: JSON.stringify(args) }),
  event(runId, 'tool.result', { callId: 'c1', name: 'clarify', ok: true, content: 'Which one? (a, b)' }),
  event(runId, 'run.completed', { output: 'Which one? (a, b)' }),
];

describe('foldSessionEvents', () => {
  it("keeps each run's timeline in the order its first event came, and ends a run by its last event", () => {
    const events = [
      event('run_a', 'run.queued', {}),
      event('run_a', 'message', { role: 'assistant', content: 'first', toolCalls: [] }),
      event('run_a', 'run.completed', { output: 'first' }),
      event('run_b', 'run.queued', {}),
      event('run_b', 'message.delta', { text: 'sec' }),
    ];
    const chat = foldSessionEvents(EMPTY_CHAT, events);
    expect(chat.runs.map((run) => [run.runId, run.status])).toEqual([
      ['run_a', 'completed'],
      ['run_b', 'live'],
    ]);
    expect(chatBlocks(chat.runs[1] as never)).toMatchObject([
      { kind: 'text', item: { text: 'sec', streaming: true } },
    ]);
  });

  it('folds each event once: a replay after a reload or a reconnect changes nothing', () => {
    const events = [
      event('run_c', 'message.delta', { text: 'Hel' }),
      event('run_c', 'message.delta', { text: 'lo' }),
      event('run_d', 'message.delta', { text: 'again' }),
    ];
    const once = foldSessionEvents(EMPTY_CHAT, events);
    const twice = foldSessionEvents(foldSessionEvents(once, events.slice(1)), events);
    expect(
      twice.runs.map((run) => chatBlocks(run).map((block) => block.kind === 'text' && block.item.text)),
    ).toEqual([['Hello'], ['again']]);
  });

  it('groups the tool calls between two texts into one block, leaving out clarify calls (drawn as cards)', () => {
    const chat = foldSessionEvents(EMPTY_CHAT, [
      event('run_e', 'tool.call', { callId: 'a', name: 'read_file', arguments: '{}' }),
      event('run_e', 'tool.call', { callId: 'b', name: 'bash', arguments: '{}' }),
      event('run_e', 'message', { role: 'assistant', content: 'read', toolCalls: [] }),
      event('run_e', 'tool.call', { callId: 'c', name: 'ls', arguments: '{}' }),
      event('run_e', 'tool.call', { callId: 'd', name: 'clarify', arguments: '{"question":"Q?"}' }),
    ]);
    expect(
      chatBlocks(chat.runs[0] as never).map((block) =>
        block.kind === 'tools' ? block.items.map((item) => item.name) : block.kind,
      ),
    ).toEqual([['read_file', 'bash'], 'text', ['ls']]);
  });
});

describe('chatBlocks of held calls and steered messages', () => {
  it('draws each call held for approval, and each message sent into the live run, where it came', () => {
    const held = {
      requestId: 'apr_1',
      callId: 'c1',
      tool: 'write_file',
      arguments: { path: 'a.md', content: 'x' },
      reason: 'tools: write_file',
      expiresAt: '2026-11-30T13:00:00.000Z',
      onTimeout: 'reject',
    };
    const chat = foldSessionEvents(EMPTY_CHAT, [
      event('run_h', 'message', { role: 'assistant', content: 'writing', toolCalls: [] }),
      event('run_h', 'approval.requested', held),
      event('run_h', 'message.received', { messageId: 'msg_1', content: 'use b.md' }),
      event('run_h', 'approval.resolved', { requestId: 'apr_1', decision: 'approve', by: 'acme' }),
    ]);
    expect(chatBlocks(chat.runs[0] as never)).toMatchObject([
      { kind: 'text', item: { text: 'writing' } },
      { kind: 'approval', item: { approval: { requestId: 'apr_1' }, decision: { decision: 'approve' } } },
      { kind: 'user', item: { messageId: 'msg_1', content: 'use b.md', delivery: { state: 'pending' } } },
    ]);
  });
});

describe('returnedQuestion', () => {
  it('is the question of a run that ended on a clarify call (return mode), with its choices', () => {
    const chat = foldSessionEvents(EMPTY_CHAT, ask('run_f', { question: 'Which one?', choices: ['a', 'b'] }));
    expect(returnedQuestion(chat.runs[0] as never)).toEqual({ question: 'Which one?', choices: ['a', 'b'] });
  });

  it('is none for a run still live, one that said something after asking, or one that ended otherwise', () => {
    const [call, result, completed] = ask('run_g', { question: 'Q?' }) as [RunEvent, RunEvent, RunEvent];
    const live = foldSessionEvents(EMPTY_CHAT, [call, result]);
    expect(returnedQuestion(live.runs[0] as never)).toBeUndefined();
    const spoke = foldSessionEvents(live, [
      event('run_g', 'message', { role: 'assistant', content: 'thanks', toolCalls: [] }),
      completed,
    ]);
    expect(returnedQuestion(spoke.runs[0] as never)).toBeUndefined();
    const [call2, result2] = ask('run_h', { question: 'Q?' }) as [RunEvent, RunEvent];
    const failed = foldSessionEvents(EMPTY_CHAT, [
      call2,
      result2,
      event('run_h', 'run.failed', { error: { code: 'X', message: 'x' } }),
    ]);
    expect(returnedQuestion(failed.runs[0] as never)).toBeUndefined();
  });
});

describe('userMessages', () => {
  it("is each run's first user entry", () => {
    const entry = (role: 'user' | 'assistant', runId: string, content: string) =>
      ({ role, runId, content, at: '2026-11-30T12:00:00.000Z' }) as TranscriptEntryView;
    expect([
      ...userMessages([
        entry('user', 'r1', 'hi'),
        entry('assistant', 'r1', 'hello'),
        entry('user', 'r2', 'bye'),
      ]),
    ]).toEqual([
      ['r1', 'hi'],
      ['r2', 'bye'],
    ]);
  });
});
