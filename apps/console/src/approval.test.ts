import type { PendingApproval, RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import {
  approvalCards,
  argumentsText,
  decisionText,
  editorText,
  parseEditedArguments,
  refusalText,
} from './approval.js';
import { EMPTY_TIMELINE, foldEvents } from './timeline.js';

let seq = 0;
function event(type: RunEvent['type'], data: unknown): RunEvent {
  seq++;
  return { id: `1000-${seq}`, runId: 'run_x', type, at: '2026-11-30T12:00:00.000Z', data } as RunEvent;
}
const held = (requestId: string, tool = 'write_file'): PendingApproval => ({
  requestId,
  callId: `call_${requestId}`,
  tool,
  arguments: { path: `${requestId}.md`, content: 'hi' },
  reason: `tools: ${tool}`,
  expiresAt: '2026-11-30T13:00:00.000Z',
  onTimeout: 'reject',
});

describe('approvalCards', () => {
  const earlier = held('apr_0');
  const [a, b] = [held('apr_a'), held('apr_b', 'bash')];
  const timeline = foldEvents(EMPTY_TIMELINE, [
    event('approval.requested', earlier),
    event('approval.resolved', { requestId: 'apr_0', decision: 'approve', by: 'acme' }),
    event('attempt.started', { attempt: 1, resumed: true, step: 1 }),
    event('approval.requested', a),
    event('approval.requested', b),
    event('approval.resolved', { requestId: 'apr_a', decision: 'reject', by: 'ops', message: 'no' }),
  ]);

  it("shows the waiting turn's calls: those still pending, and those of the turn decided already", () => {
    const cards = approvalCards({ status: 'waiting_for_input', pendingApprovals: [b] }, timeline.items);
    expect(cards).toMatchObject([
      { approval: { requestId: 'apr_a' }, decision: { decision: 'reject', by: 'ops' } },
      { approval: { requestId: 'apr_b' } },
    ]);
    expect(cards[1]?.decision).toBeUndefined();
  });

  it('shows none once the run moves on, and a pending call whose event has not arrived yet', () => {
    expect(approvalCards({ status: 'running', pendingApprovals: [b] }, timeline.items)).toEqual([]);
    expect(approvalCards({ status: 'waiting_for_input' }, timeline.items)).toEqual([]);
    const late = held('apr_late');
    expect(approvalCards({ status: 'waiting_for_input', pendingApprovals: [late] }, [])).toEqual([
      { approval: late },
    ]);
  });
});

describe("approvalCards of a crew root's children", () => {
  const [one, two] = ['run_child_1', 'run_child_2'];
  const timeline = foldEvents(EMPTY_TIMELINE, [
    event('child.started', { childRunId: one, index: 0, goal: 'write' }),
    event('child.started', { childRunId: two, index: 1, goal: 'push' }),
    event('approval.requested', { childRunId: one, ...held('apr_1') }),
    event('approval.requested', { childRunId: one, ...held('apr_2', 'bash') }),
    event('approval.resolved', { childRunId: one, requestId: 'apr_1', decision: 'approve', by: 'acme' }),
    event('approval.requested', { childRunId: two, ...held('apr_3') }),
    event('child.finished', { childRunId: two, index: 1, status: 'cancelled', summary: 'cancelled' }),
  ]);

  it('shows the held calls of children still running, each naming its child, while the root waits for them', () => {
    const cards = approvalCards({ status: 'waiting_for_children' }, timeline.items);
    expect(cards).toMatchObject([
      { approval: { requestId: 'apr_1', childRunId: one }, decision: { decision: 'approve', by: 'acme' } },
      { approval: { requestId: 'apr_2', childRunId: one } },
    ]);
    expect(cards[1]?.decision).toBeUndefined();
    // A finished child's undecided call will never be decided: no card. Nor any once the root moves on.
    expect(approvalCards({ status: 'running' }, timeline.items)).toEqual([]);
  });
});

describe('the words of a decision', () => {
  it('names the decision and who took it, or says the deadline took it', () => {
    expect(decisionText({ decision: 'approve', by: 'acme' })).toBe('Approved by acme');
    expect(decisionText({ decision: 'edit', by: 'acme' })).toBe('Edited by acme');
    expect(decisionText({ decision: 'reject' })).toBe('Rejected');
    expect(decisionText({ decision: 'reject', by: 'timeout', timedOut: true })).toBe(
      'Decided at the deadline: rejected',
    );
    expect(decisionText({ decision: 'approve', by: 'timeout', timedOut: true })).toBe(
      'Decided at the deadline: approved',
    );
  });

  it('says what a refusal means: a conflict by its code, anything else in the API’s words', () => {
    const apiError = (status: number, code: string, message: string) =>
      Object.assign(new Error(message), { status, code });
    expect(refusalText(apiError(409, 'ERR_APPROVAL_ALREADY_DECIDED', 'decided'))).toEqual({
      conflict: true,
      text: 'A decision on this call was taken already (in another tab, or through the API).',
    });
    expect(refusalText(apiError(409, 'ERR_APPROVAL_EXPIRED', 'late')).text).toMatch(/deadline/);
    expect(refusalText(apiError(409, 'ERR_SOMETHING_NEW', 'a new conflict'))).toEqual({
      conflict: true,
      text: 'The decision was not taken: a new conflict',
    });
    const invalid = 'arguments: content is required';
    expect(refusalText(apiError(400, 'ERR_APPROVAL_ARGUMENTS_INVALID', invalid))).toEqual({
      conflict: false,
      text: invalid,
    });
  });
});

describe('edited arguments', () => {
  it('takes a JSON object, and says what is wrong with anything else', () => {
    expect(parseEditedArguments('{"path": "a.md"}')).toEqual({ ok: true, arguments: { path: 'a.md' } });
    const notJson = parseEditedArguments('{"path": ');
    expect(notJson.ok).toBe(false);
    expect(notJson.ok ? '' : notJson.problem).toMatch(/^Not valid JSON: /);
    for (const [text, what] of [
      ['[1]', 'an array'],
      ['null', 'null'],
      ['"a.md"', 'a string'],
      ['3', 'a number'],
    ]) {
      expect(parseEditedArguments(text as string)).toEqual({
        ok: false,
        problem: `The arguments must be a JSON object, such as {"path": "notes.md"}, not ${what}.`,
      });
    }
  });

  it('starts the editor from the arguments as pretty JSON, and keeps text the model wrote that was not JSON', () => {
    expect(editorText({ path: 'a.md' })).toBe('{\n  "path": "a.md"\n}');
    expect(editorText('{"path": "a.md"')).toBe('{"path": "a.md"');
    expect(argumentsText({ command: 'ls' })).toBe('{"command":"ls"}');
    expect(argumentsText('not json')).toBe('not json');
  });
});
