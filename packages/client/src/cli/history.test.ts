/**
 * EventHistory: every event shown once, in order; a question or client tool
 * call shown as settled when its answer, output, timeout or the run's end
 * follows, and as open when the history ends first.
 */
import type { RunEvent, RunEventData, RunEventType } from '@tether/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventHistory } from './history.js';

let seq = 0;
function event<T extends RunEventType>(type: T, data: RunEventData<T>): RunEvent {
  seq++;
  return { id: `1-${seq}`, runId: 'run_1', type, at: new Date(seq).toISOString(), data } as RunEvent;
}

const expiresAt = new Date(60_000).toISOString();
const question = (requestId: string) =>
  event('clarify.requested', { requestId, question: 'Which?', choices: [], expiresAt });
const toolCall = (requestId: string) =>
  event('tool.requested', { requestId, callId: `c_${requestId}`, name: 'get', arguments: {}, expiresAt });
const answered = (requestId: string) => event('clarify.answered', { requestId, answer: 'x' });
const received = (requestId: string) => event('tool.output_received', { requestId, isError: false });
const toolTimedOut = (requestId: string) => event('tool.timed_out', { requestId });
const started = () => event('run.started', { attempt: 1, workerId: 'w1' });
const cancelled = () => event('run.cancelled', {});

function replay(events: RunEvent[]): Array<[string, boolean]> {
  const shown: Array<[string, boolean]> = [];
  const history = new EventHistory((e, settled) => shown.push([e.id, settled]));
  for (const e of events) history.push(e);
  history.end();
  return shown;
}

describe('EventHistory', () => {
  it('shows a question answered later as settled, and one still open at the end as open', () => {
    const q1 = question('q1');
    const q2 = question('q2');
    const events = [started(), q1, answered('q1'), q2];
    expect(replay(events)).toEqual(events.map((e) => [e.id, e === q1]));
  });

  it("settles a question or a tool call when the run ends, and tool calls each by their own request's end", () => {
    const a = toolCall('tcr_a');
    const b = toolCall('tcr_b');
    const c = toolCall('tcr_c');
    const q = question('q1');
    const events = [a, b, c, received('tcr_b'), toolTimedOut('tcr_a'), q, cancelled()];
    // tcr_c has no end of its own: the run's end settles it, as it does the question.
    const settled = new Set([a, b, c, q]);
    expect(replay(events)).toEqual(events.map((e) => [e.id, settled.has(e)]));
    const open = toolCall('tcr_d');
    const after = started();
    expect(replay([open, after])).toEqual([
      [open.id, false],
      [after.id, false],
    ]);
  });

  it('shows every event exactly once, in the order given, whatever the sequence', () => {
    const make = [
      () => started(),
      () => question('q1'),
      () => question('q2'),
      () => answered('q1'),
      () => answered('q2'),
      () => toolCall('t1'),
      () => toolCall('t2'),
      () => received('t1'),
      () => toolTimedOut('t2'),
      () => cancelled(),
    ];
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: make.length - 1 }), { maxLength: 30 }), (picks) => {
        const events = picks.map((i) => (make[i] as () => RunEvent)());
        expect(replay(events).map(([id]) => id)).toEqual(events.map((e) => e.id));
      }),
    );
  });
});
