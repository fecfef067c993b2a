/**
 * The RunView's crew lines from fixture events: each child as it starts and
 * finishes, how many children the parent waits for once its delegation's
 * children have all started, in box-drawing marks on a colour terminal and in
 * ASCII otherwise. Retries, held tool calls, and messages sent to a live run.
 */
import type { RunEvent, RunEventData, RunEventType } from '@tether/protocol';
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import { RecordingOutput } from '../testing/terminal.js';
import { RunView } from './run-view.js';

let seq = 0;
function event<T extends RunEventType>(type: T, data: RunEventData<T>): RunEvent {
  seq++;
  return { id: `1-${seq}`, runId: 'run_p', type, at: new Date(seq).toISOString(), data } as RunEvent;
}

function render(events: RunEvent[], color = false): string {
  const out = new RecordingOutput(color);
  const view = new RunView(out, pc.createColors(color));
  for (const e of events) view.render(e);
  view.endLine();
  return out.plain;
}

const parallelCall = (callId: string, goals: string[]) =>
  event('tool.call', {
    callId,
    name: 'delegate_parallel',
    arguments: JSON.stringify({ tasks: goals.map((goal) => ({ goal })) }),
  });
const started = (index: number, goal: string) =>
  event('child.started', { childRunId: `run_c${index}`, index, goal });

describe('RunView: crew children', () => {
  it("shows each child's start with its goal's first line, then how many children the parent waits for", () => {
    const text = render([
      parallelCall('c1', ['Write the parser', 'Write the tests', 'Update the docs']),
      started(0, 'Write the parser\nfor the config format'),
      started(1, 'Write the tests'),
      started(2, 'Update the docs'),
    ]);
    const [call, ...rest] = text.split('\n');
    expect(call).toMatch(/^ {2}> delegate_parallel tasks=/);
    expect(rest.join('\n')).toBe(
      [
        '    -> child 0 started: Write the parser (run_c0)',
        '    -> child 1 started: Write the tests (run_c1)',
        '    -> child 2 started: Update the docs (run_c2)',
        '    waiting for 3 children',
        '',
      ].join('\n'),
    );
  });

  it("shows each child's end with its status and its summary's first line, and the result after the wait", () => {
    const text = render([
      event('tool.call', { callId: 'c1', name: 'delegate_task', arguments: '{"goal":"Fix the bug"}' }),
      started(0, 'Fix the bug'),
      event('child.finished', {
        childRunId: 'run_c0',
        index: 0,
        status: 'escalated',
        summary: 'The bug is in a vendored library.\nI cannot patch it.\nAsk the user.',
      }),
      event('tool.result', { callId: 'c1', name: 'delegate_task', ok: true, content: '[{"index":0}]' }),
      event('child.finished', { childRunId: 'run_c9', index: 4, status: 'timed_out', summary: '' }),
    ]);
    expect(text).toContain(
      '    -> child 0 started: Fix the bug (run_c0)\n    waiting for 1 child\n' +
        '    -> child 0 escalated: The bug is in a vendored library. (+2 lines) (run_c0)\n' +
        '    ok [{"index":0}]\n',
    );
    expect(text).toContain('    -> child 4 timed_out: (no summary) (run_c9)\n');
  });

  it('says nothing of waiting until every task of the delegation has started, and counts a child once', () => {
    const partial = render([parallelCall('c1', ['a', 'b']), started(0, 'a'), started(0, 'a')]);
    expect(partial).not.toContain('waiting for');
    // No delegating call seen (or arguments it cannot read): the children show, the count does not.
    const unknown = render([
      event('tool.call', { callId: 'c1', name: 'delegate_parallel', arguments: '{"tasks": nope' }),
      started(0, 'a'),
      started(1, 'b'),
    ]);
    expect(unknown).toContain('-> child 1 started: b (run_c1)');
    expect(unknown).not.toContain('waiting for');
    // A refused delegation ends with its result: children of a later one are counted afresh.
    const refused = render([
      parallelCall('c1', ['a', 'b', 'c']),
      event('tool.result', { callId: 'c1', name: 'delegate_parallel', ok: false, content: 'Too many tasks' }),
      parallelCall('c2', ['a', 'b']),
      started(0, 'a'),
      started(1, 'b'),
    ]);
    expect(refused.match(/waiting for/g)).toEqual(['waiting for']);
    expect(refused).toContain('waiting for 2 children');
  });

  it('draws the child mark with a box-drawing arrow on a colour terminal', () => {
    const text = render(
      [
        started(3, 'Write the parser'),
        event('child.finished', { childRunId: 'run_c3', index: 3, status: 'completed', summary: 'Done.' }),
      ],
      true,
    );
    expect(text).toBe(
      '    ↳ child 3 started: Write the parser (run_c3)\n    ↳ child 3 completed: Done. (run_c3)\n',
    );
  });
});

describe('RunView: a retry', () => {
  it('names the attempt that failed and the one to come, and the delay as the worker waits it', () => {
    const error = { code: 'ERR_MODEL_UNAVAILABLE', message: 'upstream 503' };
    // The worker records the attempt to come: after attempt 1 failed, attempt 2.
    expect(
      render([
        event('run.retrying', { attempt: 2, delayMs: 2_000, error }),
        event('run.retrying', { attempt: 3, delayMs: 500, error }),
        event('run.retrying', { attempt: 4, delayMs: 90_000, error }),
      ]),
    ).toBe(
      [
        'Attempt 1 failed (ERR_MODEL_UNAVAILABLE: upstream 503); attempt 2 in 2s',
        'Attempt 2 failed (ERR_MODEL_UNAVAILABLE: upstream 503); attempt 3 in 500ms',
        'Attempt 3 failed (ERR_MODEL_UNAVAILABLE: upstream 503); attempt 4 in 1m 30s',
        '',
      ].join('\n'),
    );
  });
});

describe('RunView: a held tool call', () => {
  const requested = (tool: string, args: unknown, settled = true) => {
    const out = new RecordingOutput(false);
    const view = new RunView(out, pc.createColors(false), {
      now: () => Date.parse('2026-12-03T08:50:00.000Z'),
    });
    view.render(
      event('approval.requested', {
        requestId: 'apr_1',
        callId: 'call_0',
        tool,
        arguments: args,
        reason: `tools: ${tool}`,
        expiresAt: '2026-12-03T09:00:00.000Z',
        onTimeout: 'reject',
      }),
      { settled },
    );
    return out.plain;
  };

  it("cuts a long file's content to 20 lines and each line to 160 characters, saying how much is left out", () => {
    const content = `${'x'.repeat(300)}\n${Array.from({ length: 29 }, (_, i) => `line ${i + 2}`).join('\n')}\n`;
    const lines = requested('write_file', { path: 'big.txt', content }).split('\n');
    expect(lines.slice(0, 3)).toEqual([
      '  ! write_file waited for approval (tools: write_file)',
      '    path: big.txt',
      '    content (30 lines, 525 B):',
    ]);
    expect(lines[3]).toBe(`    | ${'x'.repeat(157)}…`);
    expect(lines[22]).toBe('    | line 20');
    expect(lines[23]).toBe('    … (+10 lines)');
    expect(lines).toHaveLength(25);
  });

  it("shows arguments that were not JSON as the model's text, an empty file as empty, and a bash call's other fields", () => {
    expect(requested('lookup', '{"q": unfinished')).toBe(
      '  ! lookup waited for approval (tools: lookup)\n    {"q": unfinished\n',
    );
    expect(requested('write_file', { path: 'empty.txt', content: '' })).toContain(
      '    path: empty.txt\n    content: (empty)\n',
    );
    expect(requested('bash', { command: 'make\nmake test', timeout: 600 })).toContain(
      '    $ make\n      make test\n    timeout: 600\n',
    );
  });

  it('shows the time left and what the deadline does while it waits', () => {
    expect(requested('bash', { command: 'make' }, false)).toContain(
      '    10:00 left to decide (until 09:00:00 UTC); then it is rejected\n',
    );
  });
});

describe('RunView: messages sent to a live run', () => {
  const received = (messageId: string, content: string) => event('message.received', { messageId, content });

  it('quotes a message on one line, cut to 200 characters, and quotes its start when the run takes it', () => {
    const long = `Rewrite the summary\n\nfor managers: ${'very '.repeat(60)}short.`;
    const lines = render([received('msg_1', long), event('message.delivered', { messageId: 'msg_1' })]).split(
      '\n',
    );
    expect(lines[0]).toBe(
      `  -> message for the run: "${`Rewrite the summary for managers: ${'very '.repeat(60)}`.slice(0, 199)}…"`,
    );
    expect(lines[1]).toBe(
      '  + the run took your message "Rewrite the summary for managers: very very very very very …"',
    );
  });

  it('names the message by its id when its arrival was not seen (a follower that joined later)', () => {
    expect(
      render([
        event('message.delivered', { messageId: 'msg_7' }),
        event('message.undelivered', { messageId: 'msg_8' }),
      ]),
    ).toBe('  + the run took your message (msg_7)\n  x the run ended before taking your message (msg_8)\n');
  });

  it('draws arrows and ticks on a colour terminal, and shows messages in a conversation too', () => {
    expect(
      render(
        [
          received('msg_1', 'Use metric units.'),
          event('message.delivered', { messageId: 'msg_1' }),
          received('msg_2', 'And a table.'),
          event('message.undelivered', { messageId: 'msg_2' }),
        ],
        true,
      ),
    ).toBe(
      [
        '  → message for the run: "Use metric units."',
        '  ✓ the run took your message "Use metric units."',
        '  → message for the run: "And a table."',
        '  ✗ the run ended before taking your message "And a table."',
        '',
      ].join('\n'),
    );
    const out = new RecordingOutput(false);
    const compact = new RunView(out, pc.createColors(false), { compact: true });
    compact.render(received('msg_3', 'Shorter, please.'));
    expect(out.plain).toBe('  -> message for the run: "Shorter, please."\n');
  });
});
