/**
 * Messages to a live run through the `tether` command line against the fake API on a real port:
 * `tether steer` with words, from stdin and as JSON, its refusals (exit 1) and usage errors (exit
 * 2); `tether logs` showing a message sent, taken and not taken; `tether run` following a run that
 * another terminal steers.
 */
import { STEER_LIMITS } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { cliTerminal, useFakeApi } from '../testing/cli-terminal.js';
import type { FakeRun } from '../testing/fake-api.js';
import { runCli } from './program.js';

const fakeApi = useFakeApi();

function started(): FakeRun {
  const run = fakeApi().createRun({ input: 'Write the release notes' }, 'tenant-a');
  fakeApi().append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
  return run;
}

function sent(runId = 'run_0001') {
  return fakeApi().requests.filter((r) => r.method === 'POST' && r.path === `/v1/runs/${runId}/messages`);
}

describe('tether steer', () => {
  it('sends the words joined as one message, and says when the run takes it (exit 0)', async () => {
    const run = started();
    const { io, stdout, stderr } = cliTerminal(fakeApi());
    expect(await runCli(['steer', run.run.id, 'Keep', 'it', 'short', '-', 'two', 'lines'], io)).toBe(0);
    expect(stdout.plain).toBe('Sent msg_0001 to run_0001; the run takes it at its next turn boundary.\n');
    expect(stderr.plain).toBe('');
    expect(sent().map((r) => r.body)).toEqual([{ content: 'Keep it short - two lines' }]);
    expect(run.events.at(-1)).toMatchObject({
      type: 'message.received',
      data: { messageId: 'msg_0001', content: 'Keep it short - two lines' },
    });
  });

  it('reads the message from stdin for -, keeping its lines and dropping the last line break', async () => {
    const run = started();
    const { io, stdout } = cliTerminal(fakeApi(), { stdin: 'Use the changelog.\nSkip the chores.\n\n' });
    expect(await runCli(['steer', run.run.id, '-'], io)).toBe(0);
    expect(stdout.plain).toContain('Sent msg_0001 to run_0001;');
    expect(sent().map((r) => r.body)).toEqual([{ content: 'Use the changelog.\nSkip the chores.' }]);
  });

  it("with --json prints the API's answer", async () => {
    const run = started();
    const { io, stdout } = cliTerminal(fakeApi());
    expect(await runCli(['steer', run.run.id, 'Hurry', '--json'], io)).toBe(0);
    expect(JSON.parse(stdout.plain)).toEqual({ messageId: 'msg_0001' });
  });

  it("exits 1 with the API's message and code when it refuses: an ended run, 20 untaken, an unknown run", async () => {
    const ended = started();
    fakeApi().append(ended.run.id, 'run.completed', { output: 'done' });
    const full = started();
    for (let i = 0; i < STEER_LIMITS.pendingMax; i++) {
      expect(await runCli(['steer', full.run.id, `note ${i}`], cliTerminal(fakeApi()).io)).toBe(0);
    }
    const refusals: Array<[string, string]> = [
      [ended.run.id, 'error: Run run_0001 has ended; it takes no more messages. (ERR_RUN_ENDED, HTTP 409)'],
      [
        full.run.id,
        'error: Run run_0002 holds 20 messages it has not taken yet; send more once it has. (ERR_RUN_MESSAGES_LIMIT, HTTP 409)',
      ],
      ['run_9999', 'error: Run run_9999 not found (ERR_RUN_NOT_FOUND, HTTP 404)'],
    ];
    for (const [id, message] of refusals) {
      const { io, stdout, stderr } = cliTerminal(fakeApi());
      expect(await runCli(['steer', id, 'one more'], io), id).toBe(1);
      expect(stderr.plain).toBe(`${message}\n`);
      expect(stdout.plain).toBe('');
    }
    expect(full.events.filter((e) => e.type === 'message.received')).toHaveLength(STEER_LIMITS.pendingMax);
  });

  it('exits 2 on usage errors, sending nothing: no message, a blank one, empty stdin, one over the limit', async () => {
    const run = started();
    const tooLong = 'x'.repeat(STEER_LIMITS.contentMaxLength + 1);
    const usage: Array<[string[], string | undefined, string]> = [
      [[run.run.id], undefined, "missing required argument 'message'"],
      [[run.run.id, '  '], undefined, 'error: the message must not be empty'],
      [[run.run.id, '-'], '\n', 'error: stdin held no message'],
      [[run.run.id, tooLong], undefined, 'error: the message must be at most 20000 characters (got 20001)'],
      [[run.run.id, '-'], `${tooLong}\n`, 'at most 20000 characters (got 20001)'],
    ];
    for (const [args, stdin, message] of usage) {
      const { io, stderr } = cliTerminal(fakeApi(), stdin === undefined ? {} : { stdin });
      expect(await runCli(['steer', ...args], io), message).toBe(2);
      expect(stderr.plain).toContain(message);
    }
    // At the limit, counted in characters as the API counts them: an emoji is one.
    const { io } = cliTerminal(fakeApi());
    expect(await runCli(['steer', run.run.id, '🙂'.repeat(STEER_LIMITS.contentMaxLength)], io)).toBe(0);
    expect(sent()).toHaveLength(1);
  });
});

describe('messages in the events the CLI prints', () => {
  it('tether logs shows each message sent, then that the run took it or ended before it could', async () => {
    const run = started();
    expect(
      await runCli(['steer', run.run.id, 'Keep the notes\nunder a page.'], cliTerminal(fakeApi()).io),
    ).toBe(0);
    fakeApi().deliverMessages(run.run.id);
    fakeApi().append(run.run.id, 'message', { role: 'assistant', content: 'Noted.', toolCalls: [] });
    expect(
      await runCli(['steer', run.run.id, 'Add the migration steps too.'], cliTerminal(fakeApi()).io),
    ).toBe(0);
    fakeApi().append(run.run.id, 'run.completed', { output: 'Noted.' });
    const { io, stdout } = cliTerminal(fakeApi());
    expect(await runCli(['logs', run.run.id], io)).toBe(0);
    expect(stdout.plain).toBe(
      [
        'queued',
        'started: attempt 1 on w1',
        '  -> message for the run: "Keep the notes under a page."',
        '  + the run took your message "Keep the notes under a page."',
        '-- step 1 --',
        'Noted.',
        '  -> message for the run: "Add the migration steps too."',
        '  x the run ended before taking your message "Add the migration steps too."',
        '',
        'Completed',
        '',
      ].join('\n'),
    );
  });

  it('tether run shows a message another terminal sends, and the run taking it, as it follows', async () => {
    fakeApi().onSubmit = (run) => fakeApi().append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    // At its next turn boundary the run takes the message, then answers and completes.
    fakeApi().onMessage = (run) => {
      fakeApi().deliverMessages(run.run.id);
      fakeApi().append(run.run.id, 'message', {
        role: 'assistant',
        content: 'Short notes it is.',
        toolCalls: [],
      });
      fakeApi().append(run.run.id, 'run.completed', { output: 'Short notes it is.' });
    };
    const { io, stdout } = cliTerminal(fakeApi());
    const following = runCli(['run', 'Write the release notes'], io);
    await stdout.waitFor('started: attempt 1 on w1');
    expect(await runCli(['steer', 'run_0001', 'Keep them short.'], cliTerminal(fakeApi()).io)).toBe(0);
    expect(await following).toBe(0);
    expect(stdout.plain).toContain(
      [
        'started: attempt 1 on w1',
        '  -> message for the run: "Keep them short."',
        '  + the run took your message "Keep them short."',
        '-- step 1 --',
        'Short notes it is.',
        '',
        'Completed',
      ].join('\n'),
    );
  });
});
