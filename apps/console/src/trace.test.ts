import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { EMPTY_TRACE, foldTrace } from './trace.js';
import { axisTicks, tickLabel } from './trace-view.js';

let seq = 0;
/** An event `ms` after 12:00:00. */
function event(ms: number, type: RunEvent['type'], data: unknown): RunEvent {
  seq++;
  const at = new Date(Date.parse('2026-11-30T12:00:00.000Z') + ms).toISOString();
  return { id: `1000-${seq}`, runId: 'run_x', type, at, data } as RunEvent;
}
const T0 = Date.parse('2026-11-30T12:00:00.000Z');
const usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };
const message = (content: string) => ({ role: 'assistant', content, toolCalls: [] });

describe('foldTrace', () => {
  it('draws the queue, each model turn from its start to its usage, and each call to its result', () => {
    const trace = foldTrace(EMPTY_TRACE, [
      event(0, 'run.queued', {}),
      event(100, 'run.started', { attempt: 1, workerId: 'w' }),
      event(100, 'attempt.started', { attempt: 1, resumed: false, step: 0 }),
      event(150, 'message.delta', { text: 'Let me look' }),
      event(400, 'usage', usage),
      event(400, 'message', {
        ...message('Let me look.'),
        toolCalls: [{ id: 'c1', name: 'bash', arguments: '{}' }],
      }),
      event(410, 'tool.call', { callId: 'c1', name: 'bash', arguments: '{"command":"ls -la\\necho"}' }),
      event(900, 'tool.result', { callId: 'c1', name: 'bash', ok: false, content: 'exit 1' }),
      event(1500, 'usage', usage),
      event(1500, 'message', message('Done.')),
      event(1510, 'run.completed', { output: 'Done.' }),
    ]);
    expect(trace.startMs).toBe(T0);
    expect(trace.endMs).toBe(T0 + 1510);
    expect(trace.queue).toMatchObject({ startMs: T0, endMs: T0 + 100, outcome: 'ok' });
    expect(trace.groups).toHaveLength(1);
    expect(trace.groups[0]?.spans).toMatchObject([
      { kind: 'turn', startMs: T0 + 100, endMs: T0 + 400, text: 'Let me look.', detail: '10 in, 2 out' },
      { kind: 'tool', label: 'bash', detail: 'ls -la', startMs: T0 + 410, endMs: T0 + 900, outcome: 'error' },
      // The next turn starts when the last result came back, and its message joins it.
      { kind: 'turn', startMs: T0 + 900, endMs: T0 + 1500, text: 'Done.' },
    ]);
  });

  it('draws a question as a wait, and a resumed attempt as a group of its own', () => {
    const trace = foldTrace(EMPTY_TRACE, [
      event(0, 'attempt.started', { attempt: 1, resumed: false, step: 0 }),
      event(10, 'tool.call', { callId: 'q', name: 'clarify', arguments: '{"question":"Which?"}' }),
      event(20, 'clarify.requested', { requestId: 'r', question: 'Which?', choices: [], expiresAt: '' }),
      event(60_000, 'clarify.answered', { requestId: 'r', answer: 'red' }),
      event(60_050, 'attempt.started', { attempt: 1, resumed: true, step: 1 }),
      event(60_060, 'tool.result', { callId: 'q', name: 'clarify', ok: true, content: 'red' }),
    ]);
    expect(trace.groups.map((group) => [group.attempt, group.resumed])).toEqual([
      [1, false],
      [1, true],
    ]);
    expect(trace.groups[0]?.spans).toMatchObject([
      // The question's call is not cut off by the resumption: its result ends it.
      { kind: 'tool', label: 'clarify', endMs: T0 + 60_060, outcome: 'ok' },
      { kind: 'wait', label: 'Waiting for an answer', detail: 'Which?', endMs: T0 + 60_000, text: 'red' },
    ]);
    expect(trace.groups[0]?.endMs).toBe(T0 + 60_000);
  });

  it('says a call was cut off by a lost worker, or by a cancel, and nests children under their delegation', () => {
    const trace = foldTrace(EMPTY_TRACE, [
      event(0, 'attempt.started', { attempt: 1, resumed: false, step: 0 }),
      event(10, 'tool.call', { callId: 'b', name: 'bash', arguments: '{"command":"sleep 60"}' }),
      event(5_000, 'attempt.started', { attempt: 2, resumed: false, step: 0 }),
      event(5_010, 'tool.call', { callId: 'd', name: 'delegate_parallel', arguments: '{"tasks":[{},{}]}' }),
      event(5_020, 'child.started', { childRunId: 'run_c1', index: 0, goal: 'one' }),
      event(5_030, 'child.started', { childRunId: 'run_c2', index: 1, goal: 'two' }),
      event(6_000, 'child.finished', { childRunId: 'run_c1', index: 0, status: 'completed', summary: '' }),
      event(7_000, 'run.cancelled', {}),
    ]);
    const [first, second] = trace.groups;
    expect(first?.spans[0]).toMatchObject({ label: 'bash', outcome: 'stopped', stopped: 'lost' });
    expect(second?.spans).toMatchObject([
      {
        label: 'delegate_parallel',
        detail: '2 tasks',
        stopped: 'cancel',
        children: [
          { runId: 'run_c1', goal: 'one', endMs: T0 + 6_000, status: 'completed' },
          { runId: 'run_c2', goal: 'two' },
        ],
      },
      { kind: 'wait', label: 'Waiting for children', endMs: T0 + 7_000, outcome: 'stopped' },
    ]);
  });

  it("draws each held call's wait for a decision, ended by its decision or by the deadline", () => {
    const asked = (requestId: string, tool: string, args: Record<string, unknown>) => ({
      requestId,
      callId: `call_${requestId}`,
      tool,
      arguments: args,
      reason: `tools: ${tool}`,
      expiresAt: '2026-11-30T13:00:00.000Z',
      onTimeout: 'reject',
    });
    const trace = foldTrace(EMPTY_TRACE, [
      event(0, 'attempt.started', { attempt: 1, resumed: false, step: 0 }),
      event(10, 'approval.requested', asked('apr_1', 'bash', { command: 'npm publish\n--dry-run' })),
      event(10, 'approval.requested', asked('apr_2', 'write_file', { path: 'NOTES.md', content: 'v2' })),
      // The second is decided first: each wait ends with its own decision.
      event(4_000, 'approval.resolved', { requestId: 'apr_2', decision: 'approve', by: 'acme' }),
      event(9_000, 'approval.resolved', {
        requestId: 'apr_1',
        decision: 'reject',
        by: 'timeout',
        timedOut: true,
      }),
    ]);
    expect(trace.groups[0]?.spans).toMatchObject([
      {
        kind: 'wait',
        label: 'Waiting for approval of bash',
        detail: 'npm publish',
        requestId: 'apr_1',
        endMs: T0 + 9_000,
        outcome: 'error',
        text: 'Decided at the deadline: rejected',
      },
      {
        kind: 'wait',
        label: 'Waiting for approval of write_file',
        detail: 'NOTES.md',
        endMs: T0 + 4_000,
        outcome: 'ok',
        text: 'Approved by acme',
      },
    ]);
  });

  it('folds each event once, however often the stream repeats it', () => {
    const events = [
      event(0, 'attempt.started', { attempt: 1, resumed: false, step: 0 }),
      event(10, 'tool.call', { callId: 'c', name: 'read_file', arguments: '{"path":"a.md"}' }),
    ];
    const once = foldTrace(EMPTY_TRACE, events);
    const twice = foldTrace(once, events);
    expect(twice.groups).toHaveLength(1);
    expect(twice.groups[0]?.spans).toHaveLength(1);
    expect(once.groups[0]?.spans).toHaveLength(1);
  });
});

describe("the trace's axis", () => {
  it('ticks at round steps, at most six, labelled short', () => {
    expect(axisTicks(107)).toEqual([0, 50, 100]);
    expect(axisTicks(4_800)).toEqual([0, 1_000, 2_000, 3_000, 4_000]);
    expect(axisTicks(61_000)).toEqual([0, 15_000, 30_000, 45_000, 60_000]);
    expect(axisTicks(10 * 86_400_000).length).toBeLessThanOrEqual(6);
    expect([0, 500, 15_000, 120_000, 90 * 60_000, 5_400_000 * 2].map(tickLabel)).toEqual([
      '0',
      '500 ms',
      '15 s',
      '2 min',
      '1.5 h',
      '3 h',
    ]);
  });
});
