/**
 * Tool calls that wait for a decision, through the `tether` command line
 * against the fake API on a real port: `tether run` asking at a terminal
 * (approve, edit with invalid JSON and a server's 400 on the way, reject, two
 * calls of one turn, decided elsewhere meanwhile) and printing how to decide
 * when it cannot ask; `tether approve` each way and its refusals; `tether
 * show`, `runs` and `logs` with calls waiting; `--require-approval`.
 */
import type { PendingApproval } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { cliTerminal, useFakeApi } from '../testing/cli-terminal.js';
import type { FakeRun } from '../testing/fake-api.js';
import { KeyboardInput } from '../testing/terminal.js';
import { runCli } from './program.js';

const { enter } = KeyboardInput.keys;
/** Ctrl-U: readline clears the line left of the cursor. */
const clearLine = '\u0015';

const fakeApi = useFakeApi();

const NOTES = { tool: 'write_file', arguments: { path: 'NOTES.md', content: 'v2\n' } };

/** The run starts and its first turn's calls wait for decisions. */
function hold(
  run: FakeRun,
  calls: Array<Pick<PendingApproval, 'tool' | 'arguments'> & Partial<PendingApproval>>,
) {
  fakeApi().append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
  return fakeApi().requestApprovals(run.run.id, calls);
}

/** Once every held call has its decision, the run completes. */
function completeWhenDecided(): void {
  fakeApi().onDecision = (run) => {
    if ((run.run.pendingApprovals ?? []).length === 0)
      fakeApi().append(run.run.id, 'run.completed', { output: 'done' });
  };
}

function decisions(runId = 'run_0001') {
  return fakeApi().requests.filter(
    (r) => r.method === 'POST' && r.path.startsWith(`/v1/runs/${runId}/approvals/`),
  );
}

describe('tether run: a held tool call at a terminal', () => {
  it('shows the tool, why it asks, its arguments and the deadline; a approves it', async () => {
    fakeApi().onSubmit = (run) => hold(run, [NOTES]);
    completeWhenDecided();
    const { io, stdout, stdin } = cliTerminal(fakeApi(), { tty: true });
    const done = runCli(['run', 'note the release'], io);
    await stdout.waitFor('[a]pprove / [e]dit / [r]eject');
    expect(stdout.plain).toContain(
      [
        '  ! write_file waits for approval (tools: write_file)',
        '    path: NOTES.md',
        '    content (1 line, 3 B):',
        '    | v2',
        '',
      ].join('\n'),
    );
    expect(stdout.plain).toMatch(
      / {4}\d+:\d\d left to decide \(until \d\d:\d\d:\d\d UTC\); then it is rejected\n/,
    );
    // At a terminal it asks: no command to decide with is printed.
    expect(stdout.plain).not.toContain('tether approve');
    stdin.type('a');
    expect(await done).toBe(0);
    expect(decisions().map((r) => [r.path, r.body])).toEqual([
      ['/v1/runs/run_0001/approvals/apr_0001', { decision: 'approve' }],
    ]);
    expect(stdout.screen).toMatch(
      /\? Run write_file\? approve\n {2}write_file approved by tenant-a\n\nCompleted\ndone/,
    );
  });

  it('edits: invalid JSON is refused at the prompt, a 400 from the server is shown, then the fix is sent', async () => {
    fakeApi().onSubmit = (run) => hold(run, [NOTES]);
    fakeApi().checkEdit = (_tool, args) =>
      typeof args.content === 'string' ? undefined : '/content must be string';
    completeWhenDecided();
    const { io, stdout, stdin } = cliTerminal(fakeApi(), { tty: true });
    const done = runCli(['run', 'note the release'], io);
    await stdout.waitFor('[a]pprove');
    stdin.type('e');
    // The model's arguments are on the line to start from.
    await stdout.waitFor('> {"path":"NOTES.md","content":"v2\\n"}');
    stdin.type(clearLine);
    stdin.type('{"path": "NOTES.md", "content": }');
    stdin.type(enter);
    await stdout.waitFor('Not valid JSON (');
    expect(decisions()).toHaveLength(0);
    stdin.type(clearLine);
    stdin.type('{"path": "NOTES.md", "content": 2}');
    stdin.type(enter);
    await stdout.waitFor(
      'The server refused it: arguments: /content must be string (ERR_APPROVAL_ARGUMENTS_INVALID)',
    );
    stdin.type(clearLine);
    stdin.type('{"path": "NOTES.md", "content": "v2, reviewed\\n"}');
    stdin.type(enter);
    expect(await done).toBe(0);
    expect(decisions().map((r) => r.body)).toEqual([
      { decision: 'edit', arguments: { path: 'NOTES.md', content: 2 } },
      { decision: 'edit', arguments: { path: 'NOTES.md', content: 'v2, reviewed\n' } },
    ]);
    expect(stdout.screen).toContain('write_file edited by tenant-a: path=NOTES.md, content=v2, reviewed');
  });

  it('rejects with a message, which the server takes', async () => {
    fakeApi().onSubmit = (run) =>
      hold(run, [{ tool: 'bash', arguments: { command: 'git push --force' }, reason: 'bash.ask: .*' }]);
    completeWhenDecided();
    const { io, stdout, stdin } = cliTerminal(fakeApi(), { tty: true });
    const done = runCli(['run', 'ship it'], io);
    await stdout.waitFor('[a]pprove');
    // A bash call shows its command.
    expect(stdout.plain).toContain('  ! bash waits for approval (bash.ask: .*)\n    $ git push --force\n');
    stdin.type('r');
    await stdout.waitFor('why reject it?');
    stdin.type('Never force-push main');
    stdin.type(enter);
    expect(await done).toBe(0);
    expect(decisions().map((r) => r.body)).toEqual([
      { decision: 'reject', message: 'Never force-push main' },
    ]);
    expect(stdout.screen).toContain('bash rejected by tenant-a: Never force-push main');
  });

  it('asks for each call of a turn in turn', async () => {
    fakeApi().onSubmit = (run) =>
      hold(run, [
        { tool: 'bash', arguments: { command: 'rm -rf build' } },
        { tool: 'get_weather', arguments: { city: 'Oslo', days: [1, 2] } },
      ]);
    completeWhenDecided();
    const { io, stdout, stdin } = cliTerminal(fakeApi(), { tty: true });
    const done = runCli(['run', 'two calls'], io);
    await stdout.waitFor('? Run bash?');
    stdin.type('a');
    await stdout.waitFor('? Run get_weather?');
    // Any other tool's arguments: indented JSON.
    expect(stdout.plain).toContain(
      '    {\n      "city": "Oslo",\n      "days": [\n        1,\n        2\n      ]\n    }\n',
    );
    stdin.type('r');
    await stdout.waitFor('why reject it?');
    stdin.type(enter);
    expect(await done).toBe(0);
    expect(decisions().map((r) => [r.path.split('/').at(-1), r.body])).toEqual([
      ['apr_0001', { decision: 'approve' }],
      ['apr_0002', { decision: 'reject' }],
    ]);
  });

  it('stops asking when the call is decided elsewhere, and shows that decision', async () => {
    fakeApi().onSubmit = (run) => hold(run, [NOTES]);
    const { io, stdout } = cliTerminal(fakeApi(), { tty: true });
    const done = runCli(['run', 'note the release'], io);
    await stdout.waitFor('[a]pprove');
    const other = cliTerminal(fakeApi());
    expect(await runCli(['approve', 'run_0001', 'apr_0001', '--reject', 'not today'], other.io)).toBe(0);
    fakeApi().append('run_0001', 'run.completed', { output: 'left NOTES.md alone' });
    expect(await done).toBe(0);
    expect(stdout.screen).toContain('? Run write_file?\n  write_file rejected by tenant-a: not today\n');
    expect(stdout.screen).not.toContain('[a]pprove');
    expect(decisions()).toHaveLength(1);
  });
});

describe('tether run: a held tool call without a terminal', () => {
  it('prints how to decide with tether approve, and follows on to the decision and the end', async () => {
    fakeApi().onSubmit = (run) => hold(run, [NOTES]);
    completeWhenDecided();
    const { io, stdout } = cliTerminal(fakeApi());
    const done = runCli(['run', 'note the release'], io);
    await stdout.waitFor('decide with:');
    expect(stdout.plain).toContain(
      `    decide with: tether approve run_0001 apr_0001 [--edit '<json>' | --reject "why"]\n`,
    );
    const other = cliTerminal(fakeApi());
    expect(await runCli(['approve', 'run_0001', 'apr_0001'], other.io)).toBe(0);
    expect(await done).toBe(0);
    expect(stdout.plain).toMatch(/decide with: .*\n {2}write_file approved by tenant-a\n\nCompleted\ndone\n/);
    // Only the other command decided.
    expect(decisions()).toHaveLength(1);
  });

  it('with --json prints the events, and decides nothing even at a terminal', async () => {
    fakeApi().onSubmit = (run) => {
      const [held] = hold(run, [NOTES]);
      fakeApi().timeOutApproval(run.run.id, held?.requestId ?? '');
      fakeApi().append(run.run.id, 'run.completed', { output: 'done' });
    };
    const { io, stdout } = cliTerminal(fakeApi(), { tty: true });
    expect(await runCli(['run', 'x', '--json'], io)).toBe(0);
    const types = stdout.plain
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types).toEqual([
      'run.queued',
      'run.started',
      'approval.requested',
      'approval.resolved',
      'run.completed',
    ]);
    expect(decisions()).toHaveLength(0);
  });
});

describe('tether approve', () => {
  it('approves, edits and rejects (with a message or without), each exit 0', async () => {
    const run = fakeApi().createRun({ input: 'a' }, 'tenant-a');
    hold(run, [NOTES, NOTES, NOTES, NOTES]);
    const cases: Array<[string[], unknown, string]> = [
      [['apr_0001'], { decision: 'approve' }, 'Approved: the call runs. (run_0001, apr_0001)'],
      [
        ['apr_0002', '--edit', '{"path": "NOTES.md", "content": "v3\\n"}'],
        { decision: 'edit', arguments: { path: 'NOTES.md', content: 'v3\n' } },
        'Edited: the call runs with the new arguments. (run_0001, apr_0002)',
      ],
      [
        ['apr_0003', '--reject', 'Wrong file'],
        { decision: 'reject', message: 'Wrong file' },
        'Rejected: the call does not run, and the model is told. (run_0001, apr_0003)',
      ],
      [['apr_0004', '--reject'], { decision: 'reject' }, 'Rejected: the call does not run'],
    ];
    for (const [args, body, said] of cases) {
      const { io, stdout, stderr } = cliTerminal(fakeApi());
      expect(await runCli(['approve', 'run_0001', ...args], io), args.join(' ')).toBe(0);
      expect(stdout.plain).toContain(said);
      expect(stderr.plain).toBe('');
      expect(decisions().at(-1)?.body).toEqual(body);
    }
    expect(
      run.events.filter((e) => e.type === 'approval.resolved').map((e) => (e.data as { by: string }).by),
    ).toEqual(['tenant-a', 'tenant-a', 'tenant-a', 'tenant-a']);
    expect(run.run.pendingApprovals).toBeUndefined();
  });

  it("exits 1 with the API's message and code when it refuses: decided already, timed out, unknown", async () => {
    const run = fakeApi().createRun({ input: 'a' }, 'tenant-a');
    hold(run, [NOTES, NOTES]);
    fakeApi().timeOutApproval(run.run.id, 'apr_0002');
    expect(await runCli(['approve', 'run_0001', 'apr_0001'], cliTerminal(fakeApi()).io)).toBe(0);
    const refusals: Array<[string[], string]> = [
      [
        ['run_0001', 'apr_0001', '--reject'],
        'was decided already; the first decision won. (ERR_APPROVAL_ALREADY_DECIDED, HTTP 409)',
      ],
      [
        ['run_0001', 'apr_0002'],
        "timed out; the policy's onTimeout decided it. (ERR_APPROVAL_TIMED_OUT, HTTP 409)",
      ],
      [
        ['run_0001', 'apr_9999'],
        'Run run_0001 has no approval request apr_9999. (ERR_APPROVAL_UNKNOWN, HTTP 404)',
      ],
      [['run_9999', 'apr_0001'], 'Run run_9999 not found (ERR_RUN_NOT_FOUND, HTTP 404)'],
    ];
    for (const [args, message] of refusals) {
      const { io, stdout, stderr } = cliTerminal(fakeApi());
      expect(await runCli(['approve', ...args], io), args.join(' ')).toBe(1);
      expect(stderr.plain).toContain(message);
      expect(stdout.plain).toBe('');
    }
  });

  it('exits 1 for a call whose run has ended or whose deadline has passed', async () => {
    const ended = fakeApi().createRun({ input: 'a' }, 'tenant-a');
    hold(ended, [NOTES]);
    fakeApi().append(ended.run.id, 'run.cancelled', { reason: 'cancelled by request' });
    const late = fakeApi().createRun({ input: 'b' }, 'tenant-a');
    hold(late, [{ ...NOTES, expiresAt: new Date(Date.now() - 1_000).toISOString() }]);
    const first = cliTerminal(fakeApi());
    expect(await runCli(['approve', ended.run.id, 'apr_0001'], first.io)).toBe(1);
    expect(first.stderr.plain).toContain('ERR_APPROVAL_NOT_PENDING, HTTP 409');
    const second = cliTerminal(fakeApi());
    expect(await runCli(['approve', late.run.id, 'apr_0002'], second.io)).toBe(1);
    expect(second.stderr.plain).toContain('ERR_APPROVAL_EXPIRED, HTTP 409');
  });

  it('exits 2 on usage errors, sending nothing: --edit with --reject, --edit not a JSON object, no request id', async () => {
    const run = fakeApi().createRun({ input: 'a' }, 'tenant-a');
    hold(run, [NOTES]);
    const before = fakeApi().requests.length;
    const usage: Array<[string[], string]> = [
      [['run_0001', 'apr_0001', '--edit', '{}', '--reject'], 'cannot be used with'],
      [['run_0001', 'apr_0001', '--edit', '{"path": '], '--edit must be the arguments as a JSON object'],
      [['run_0001', 'apr_0001', '--edit', '["NOTES.md"]'], '--edit must be a JSON object'],
      [['run_0001'], "missing required argument 'request'"],
    ];
    for (const [args, message] of usage) {
      const { io, stderr } = cliTerminal(fakeApi());
      expect(await runCli(['approve', ...args], io), args.join(' ')).toBe(2);
      expect(stderr.plain).toContain(message);
    }
    expect(fakeApi().requests.length).toBe(before);
  });
});

describe('tether show, runs and logs with held tool calls', () => {
  it('show lists each call waiting: tool, reason, arguments on one line, time left, and how to decide', async () => {
    const run = fakeApi().createRun({ input: 'a' }, 'tenant-a');
    hold(run, [
      NOTES,
      {
        tool: 'bash',
        arguments: { command: 'git push' },
        reason: 'bash.ask: ^git push',
        onTimeout: 'approve',
      },
    ]);
    const { io, stdout } = cliTerminal(fakeApi());
    expect(await runCli(['show', run.run.id], io)).toBe(0);
    expect(stdout.plain).toMatch(
      new RegExp(
        [
          'Waiting for approval \\(2\\)',
          ' {2}! write_file \\(tools: write_file\\) \\d+:\\d\\d left; then it is rejected',
          ' {4}path=NOTES\\.md, content=v2',
          ` {4}decide with: tether approve run_0001 apr_0001 \\[--edit '<json>' \\| --reject "why"\\]`,
          ' {2}! bash \\(bash\\.ask: \\^git push\\) \\d+:\\d\\d left; then it runs',
          ' {4}command=git push',
          ' {4}decide with: tether approve run_0001 apr_0002 ',
        ].join('\n'),
      ),
    );
    const list = cliTerminal(fakeApi());
    expect(await runCli(['runs'], list.io)).toBe(0);
    expect(list.stdout.plain).toMatch(
      /run_0001\s+waiting_for_input\s+.*waiting for approval: write_file, bash\n/,
    );
  });

  it('logs shows a call decided since without the time left, then its decision; one timed out says what happened', async () => {
    const run = fakeApi().createRun({ input: 'a' }, 'tenant-a');
    hold(run, [NOTES, { tool: 'bash', arguments: { command: 'make' } }]);
    expect(
      await runCli(
        ['approve', run.run.id, 'apr_0001', '--edit', '{"path":"N.md","content":"x"}'],
        cliTerminal(fakeApi()).io,
      ),
    ).toBe(0);
    fakeApi().timeOutApproval(run.run.id, 'apr_0002');
    const { io, stdout } = cliTerminal(fakeApi());
    expect(await runCli(['logs', run.run.id], io)).toBe(0);
    expect(stdout.plain).toContain(
      [
        '  ! write_file waited for approval (tools: write_file)',
        '    path: NOTES.md',
        '    content (1 line, 3 B):',
        '    | v2',
        '  ! bash waited for approval (tools: bash)',
        '    $ make',
        '  write_file edited by tenant-a: path=N.md, content=x',
        '  No decision in time on bash: it is rejected.',
      ].join('\n'),
    );
    expect(stdout.plain).not.toContain('left to decide');
    expect(stdout.plain).not.toContain('tether approve');
  });
});

describe('tether run --require-approval', () => {
  it('sends the tools as the approval policy, and refuses a name the API would refuse (exit 2)', async () => {
    fakeApi().onSubmit = (run) => fakeApi().append(run.run.id, 'run.completed', { output: 'ok' });
    const { io } = cliTerminal(fakeApi());
    expect(
      await runCli(
        ['run', 'x', '--require-approval', 'bash', '--require-approval', 'github__*', '--json'],
        io,
      ),
    ).toBe(0);
    expect(fakeApi().requests[0]?.body).toEqual({ input: 'x', approval: { tools: ['bash', 'github__*'] } });
    const bad = cliTerminal(fakeApi());
    expect(await runCli(['run', 'x', '--require-approval', 'rm -rf'], bad.io)).toBe(2);
    expect(bad.stderr.plain).toContain('--require-approval must name a tool');
    expect(fakeApi().requests).toHaveLength(2);
  });
});
