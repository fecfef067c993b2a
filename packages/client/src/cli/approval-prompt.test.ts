/**
 * The approval prompt on plain streams (readline in terminal mode reads the
 * keys a terminal would send): each decision, an edit refused as invalid JSON
 * and then by the server, a rejection's message, esc back to the keys, the
 * deadline, and closing it from outside; what stays on the screen.
 */
import type { ApprovalDecisionBody, PendingApproval } from '@tether/protocol';
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import { TetherApiError, TetherConflictError } from '../errors.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import { askApproval } from './approval-prompt.js';

const { enter, escape: esc } = KeyboardInput.keys;
/** Ctrl-U: readline clears the line left of the cursor. */
const clearLine = '\u0015';
const colors = pc.createColors(false);

function approval(overrides: Partial<PendingApproval> = {}): PendingApproval {
  return {
    requestId: 'apr_1',
    callId: 'call_0',
    tool: 'write_file',
    arguments: { path: 'NOTES.md', content: 'v2\n' },
    reason: 'tools: write_file',
    expiresAt: new Date(Date.now() + 90_000).toISOString(),
    onTimeout: 'reject',
    ...overrides,
  };
}

function apiError(status: number, code: string, message: string): TetherApiError {
  const options = { status, method: 'POST', url: 'http://fake/v1/runs/run_1/approvals/apr_1' };
  return status === 409
    ? new TetherConflictError(code, message, options)
    : new TetherApiError(code, message, options);
}

/** A prompt whose decisions are recorded; `refuse` answers the next decisions with these errors, in order. */
function setup(
  options: { pending?: Partial<PendingApproval>; refuse?: TetherApiError[]; signal?: AbortSignal } = {},
) {
  const input = new KeyboardInput();
  const output = new RecordingOutput(true);
  const posted: ApprovalDecisionBody[] = [];
  const refusals = [...(options.refuse ?? [])];
  const choice = askApproval({
    approval: approval(options.pending),
    decide: async (decision) => {
      posted.push(decision);
      const refusal = refusals.shift();
      if (refusal) throw refusal;
    },
    input,
    output,
    colors,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { input, output, posted, choice };
}

describe('askApproval', () => {
  it('shows the tool, the three keys and the countdown; a approves', async () => {
    const { input, output, posted, choice } = setup();
    await output.waitFor('[a]pprove / [e]dit / [r]eject');
    expect(output.plain).toContain('? Run write_file? [a]pprove / [e]dit / [r]eject 1:30 left');
    input.type('x');
    await output.waitFor('Press a to approve, e to edit the arguments, r to reject.');
    input.type('a');
    await expect(choice).resolves.toEqual({ kind: 'decided', decision: { decision: 'approve' } });
    expect(posted).toEqual([{ decision: 'approve' }]);
    expect(output.screen).toBe('? Run write_file? approve');
  });

  it("e starts from the model's arguments on one line; invalid JSON and a non-object are refused there", async () => {
    const { input, output, posted, choice } = setup();
    await output.waitFor('[a]pprove');
    input.type('e');
    await output.waitFor('> {"path":"NOTES.md","content":"v2\\n"}');
    expect(output.plain).toContain('the arguments to run it with, as one line of JSON');
    input.type(clearLine);
    input.type('{"path": "NOTES.md", content: 1}');
    input.type(enter);
    // The parser's reason follows (the line is wrapped at the terminal's width).
    await output.waitFor('Not valid JSON (');
    // The refused line is kept, to be corrected.
    expect(output.screen).toContain('> {"path": "NOTES.md", content: 1}');
    input.type(clearLine);
    input.type('["NOTES.md"]');
    input.type(enter);
    await output.waitFor('The arguments must be a JSON object');
    input.type(clearLine);
    input.type('{"path": "NOTES.md", "content": "v2, reviewed\\n"}');
    input.type(enter);
    const edit = { decision: 'edit', arguments: { path: 'NOTES.md', content: 'v2, reviewed\n' } };
    await expect(choice).resolves.toEqual({ kind: 'decided', decision: edit });
    // Only the valid edit reached the server.
    expect(posted).toEqual([edit]);
    expect(output.screen).toBe('? Run write_file? edit');
  });

  it("asks again with the refused text and the server's message after a 400, then sends the fix", async () => {
    const refusal = apiError(400, 'ERR_APPROVAL_ARGUMENTS_INVALID', 'arguments: /content must be string');
    const { input, output, posted, choice } = setup({ refuse: [refusal] });
    await output.waitFor('[a]pprove');
    input.type('e');
    await output.waitFor('> {"path"');
    input.type(clearLine);
    input.type('{"path": "NOTES.md", "content": 2}');
    const before = output.mark();
    input.type(enter);
    await output.waitFor(
      'The server refused it: arguments: /content must be string (ERR_APPROVAL_ARGUMENTS_INVALID)',
      before,
    );
    expect(output.screen).toContain('> {"path": "NOTES.md", "content": 2}');
    input.type(clearLine);
    input.type('{"path": "NOTES.md", "content": "2"}');
    input.type(enter);
    await expect(choice).resolves.toEqual({
      kind: 'decided',
      decision: { decision: 'edit', arguments: { path: 'NOTES.md', content: '2' } },
    });
    expect(posted.map((d) => d.decision === 'edit' && d.arguments.content)).toEqual([2, '2']);
  });

  it('r asks for an optional message: with one, and without', async () => {
    const first = setup();
    await first.output.waitFor('[a]pprove');
    first.input.type('r');
    await first.output.waitFor('why reject it? (optional; the model is told)');
    first.input.type('Not on a Friday');
    first.input.type(enter);
    await expect(first.choice).resolves.toEqual({
      kind: 'decided',
      decision: { decision: 'reject', message: 'Not on a Friday' },
    });
    expect(first.output.screen).toBe('? Run write_file? reject: Not on a Friday');

    const second = setup();
    await second.output.waitFor('[a]pprove');
    second.input.type('r');
    await second.output.waitFor('why reject it?');
    second.input.type(enter);
    await expect(second.choice).resolves.toEqual({ kind: 'decided', decision: { decision: 'reject' } });
    expect(second.posted).toEqual([{ decision: 'reject' }]);
  });

  it('esc goes back from a step to the three keys', async () => {
    const { input, output, posted, choice } = setup();
    await output.waitFor('[a]pprove');
    input.type('r');
    await output.waitFor('why reject it?');
    input.type('hmm');
    const before = output.mark();
    input.type(esc);
    await output.waitFor('[a]pprove', before);
    input.type('a');
    await expect(choice).resolves.toEqual({ kind: 'decided', decision: { decision: 'approve' } });
    expect(posted).toEqual([{ decision: 'approve' }]);
  });

  it('rejects with a 409 from the server (decided elsewhere first), asking nothing more', async () => {
    const conflict = apiError(
      409,
      'ERR_APPROVAL_ALREADY_DECIDED',
      'Approval request apr_1 was decided already',
    );
    const { input, output, choice } = setup({ refuse: [conflict] });
    await output.waitFor('[a]pprove');
    input.type('a');
    await expect(choice).rejects.toBe(conflict);
  });

  it("ends by itself at the deadline, saying what the policy's onTimeout does", async () => {
    const { output, posted, choice } = setup({
      pending: { expiresAt: new Date(Date.now() + 300).toISOString(), onTimeout: 'approve' },
    });
    await expect(choice).resolves.toEqual({ kind: 'expired' });
    expect(output.screen).toBe('? Run write_file? (no decision in time: it runs)');
    expect(posted).toEqual([]);
  });

  it('when its signal aborts, resolves closed with the question alone on the screen', async () => {
    const controller = new AbortController();
    const { output, posted, choice } = setup({ signal: controller.signal });
    await output.waitFor('[a]pprove');
    controller.abort();
    await expect(choice).resolves.toEqual({ kind: 'closed' });
    expect(output.screen).toBe('? Run write_file?');
    expect(output.writableEnded).toBe(false);
    expect(posted).toEqual([]);
  });
});
