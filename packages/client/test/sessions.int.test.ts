/**
 * client.sessions against a real API process and worker: create, get, list,
 * send (with multitask), the transcript page by page and whole, the session's
 * event stream through a forced disconnect and resumed after an id, and
 * delete (409 while busy, then with cancel, which ends a follower's stream);
 * and `tether chat` at a pseudo-terminal (questions, held tool calls decided
 * at its prompt) and from a pipe.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReplayScript } from '@tether/protocol';
import { inTerminal, killAllSpawned } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SessionEvent,
  TetherClient,
  TetherConflictError,
  TetherError,
  TetherNotFoundError,
} from '../src/index.js';
import { API_KEY, type Stack, startCuttableProxy, startStack } from './stack.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const fast = { reconnect: { initialDelayMs: 20, maxDelayMs: 100 } };

let stack: Stack;
let client: TetherClient;
beforeAll(async () => {
  stack = await startStack('client-sessions');
  client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
}, 30_000);
afterAll(async () => {
  await stack?.stop();
  await killAllSpawned();
});

/** Reads the session's stream until `runId` has ended; returns what came, in order. */
async function untilEnded(
  stream: AsyncGenerator<SessionEvent>,
  runIds: readonly string[],
  onEvent: (event: SessionEvent) => void = () => {},
): Promise<SessionEvent[]> {
  const seen: SessionEvent[] = [];
  const open = new Set(runIds);
  for await (const event of stream) {
    seen.push(event);
    onEvent(event);
    if (event.type.startsWith('run.') && ['completed', 'failed', 'cancelled'].includes(event.type.slice(4))) {
      open.delete(event.runId);
      if (open.size === 0) break;
    }
  }
  return seen;
}

describe('client.sessions', () => {
  it('creates, reads and lists a session; sends two messages and follows both runs on one stream through a forced disconnect; reads the transcript', async () => {
    const created = await client.sessions.create({ metadata: { user: 'u-1' } });
    expect(created.id).toMatch(/^ses_/);
    expect(created).toMatchObject({ status: 'idle', runs: 0, lastRunId: null, metadata: { user: 'u-1' } });
    expect(typeof created.token).toBe('string');
    expect(await client.sessions.get(created.id)).toMatchObject({ id: created.id, status: 'idle' });
    const listed = await client.sessions.list({ limit: 100 });
    expect(listed.data.map((s) => s.id)).toContain(created.id);

    const proxy = await startCuttableProxy(stack.port);
    try {
      const viaProxy = new TetherClient({ baseUrl: proxy.url, apiKey: API_KEY });
      const script = (text: string): ReplayScript => [
        { toolCalls: [call('bash', { command: `echo ${text}` })] },
        { content: `said ${text}` },
      ];
      const first = await client.sessions.send(created.id, {
        input: 'say one',
        model: { provider: 'replay', script: script('one') },
      });
      expect(first).toMatchObject({ status: 'queued', sessionId: created.id });
      const second = await client.sessions.send(created.id, {
        input: 'say two',
        model: { provider: 'replay', script: script('two') },
        multitask: 'enqueue',
      });

      let cut = 0;
      let count = 0;
      const seen = await untilEnded(viaProxy.sessions.events(created.id, fast), [first.id, second.id], () => {
        if (++count === 3) cut = proxy.cutAll();
      });
      expect(cut).toBeGreaterThan(0);
      expect(proxy.connections()).toBeGreaterThan(1);
      // Each run's events once, in its log's order, the first run's before the second's.
      const ids = seen.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const run of [first, second]) {
        const own = seen.filter((e) => e.runId === run.id);
        const log = (await client.events(run.id, { limit: 500 })).data;
        expect(own.map((e) => e.id)).toEqual(log.map((e) => `${run.id}:${e.id}`));
      }
      const lastOfFirst = seen.findLastIndex((e) => e.runId === first.id);
      const firstOfSecond = seen.findIndex((e) => e.runId === second.id && e.type !== 'run.queued');
      expect(lastOfFirst).toBeLessThan(firstOfSecond);
      expect(seen.find((e) => e.runId === second.id && e.type === 'run.completed')?.data).toEqual({
        output: 'said two',
      });

      // Resumed after the first run's terminal event: the second run's events only.
      const terminalOfFirst = seen[lastOfFirst]?.id as string;
      const rest = await untilEnded(client.sessions.events(created.id, { after: terminalOfFirst }), [
        second.id,
      ]);
      expect(rest.map((e) => e.id)).toEqual(
        seen
          .slice(lastOfFirst + 1)
          .filter((e) => e.runId === second.id)
          .map((e) => e.id),
      );
    } finally {
      await proxy.close();
    }

    const session = await client.sessions.get(created.id);
    expect(session).toMatchObject({ status: 'idle', runs: 2 });

    const pages: number[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await client.sessions.messages(created.id, { limit: 3, ...(cursor ? { cursor } : {}) });
      pages.push(page.data.length);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    const transcript = [];
    for await (const entry of client.sessions.allMessages(created.id, { limit: 3 })) transcript.push(entry);
    expect(pages.reduce((a, b) => a + b, 0)).toBe(transcript.length);
    expect(pages[0]).toBe(3);
    expect(transcript.map((e) => [e.role, e.content])).toEqual([
      ['user', 'say one'],
      ['assistant', ''],
      ['tool', expect.stringContaining('one')],
      ['assistant', 'said one'],
      ['user', 'say two'],
      ['assistant', ''],
      ['tool', expect.stringContaining('two')],
      ['assistant', 'said two'],
    ]);
    expect(transcript[1]?.toolCalls?.[0]).toMatchObject({ name: 'bash' });
  }, 60_000);

  it('refuses a second message with multitask reject and a delete while busy; deletes with cancel, which ends a follower', async () => {
    const created = await client.sessions.create();
    const waiting = await client.sessions.send(created.id, {
      input: 'ask me',
      model: {
        provider: 'replay',
        script: [
          { toolCalls: [call('clarify', { question: 'Which?', choices: ['a', 'b'] })] },
          { content: 'ok' },
        ],
      },
      clarify: { timeoutMs: 60_000 },
    });
    const stream = client.sessions.events(created.id, fast);
    for await (const event of stream) if (event.type === 'clarify.requested') break;
    const session = await client.sessions.get(created.id);
    expect(session).toMatchObject({ status: 'waiting_for_input', pendingClarify: { runId: waiting.id } });

    const rejected = await client.sessions
      .send(created.id, {
        input: 'again',
        model: { provider: 'replay', script: [{ content: 'x' }] },
        multitask: 'reject',
      })
      .catch((error: unknown) => error);
    expect(rejected).toBeInstanceOf(TetherConflictError);
    expect(rejected).toMatchObject({ code: 'ERR_SESSION_BUSY', status: 409 });
    const busy = await client.sessions.delete(created.id).catch((error: unknown) => error);
    expect(busy).toMatchObject({ code: 'ERR_SESSION_BUSY', status: 409 });

    // A follower open on the session ends (without an error) once it is deleted.
    let following: () => void = () => {};
    const reading = new Promise<void>((resolve) => {
      following = resolve;
    });
    const follower = (async () => {
      const types: string[] = [];
      for await (const event of client.sessions.events(created.id, { ...fast, after: `${waiting.id}:0-0` })) {
        types.push(event.type);
        if (event.type === 'clarify.requested') following();
      }
      return types;
    })();
    await reading;
    await client.sessions.delete(created.id, { cancel: true });
    const types = await follower;
    expect(types).toContain('clarify.requested');
    await expect(client.sessions.get(created.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.get(waiting.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.sessions.messages(created.id)).rejects.toBeInstanceOf(TetherNotFoundError);
  }, 60_000);

  it('checks its options before sending anything', async () => {
    await expect(client.sessions.get('')).rejects.toBeInstanceOf(TetherError);
    await expect(client.sessions.list({ limit: 0 })).rejects.toMatchObject({
      code: 'ERR_CLIENT_INVALID_OPTION',
    });
    await expect(client.sessions.messages('ses_x', { limit: 1.5 })).rejects.toMatchObject({
      code: 'ERR_CLIENT_INVALID_OPTION',
    });
  });
});

describe('tether chat', () => {
  const clarifyScript: ReplayScript = [
    { toolCalls: [call('clarify', { question: 'Which colour shall I use?', choices: ['red', 'blue'] })] },
    { content: 'Painted it.' },
  ];
  const env = () => ({ TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY, NO_COLOR: '1' });
  let dir: string;
  let scriptFile: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tether-chat-'));
    scriptFile = join(dir, 'script.json');
    await writeFile(scriptFile, JSON.stringify(clarifyScript));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** `pattern` written to the terminal after the first `mark` characters (a prompt redraws itself). */
  const after = (mark: number, pattern: string) => new RegExp(`^[\\s\\S]{${mark}}[\\s\\S]*?${pattern}`);

  async function transcriptOf(sessionId: string) {
    const entries = [];
    for await (const entry of client.sessions.allMessages(sessionId)) entries.push(entry);
    return entries.map((e) => [
      e.role,
      e.role === 'assistant' && e.toolCalls ? `call ${e.toolCalls[0]?.name}` : e.content,
    ]);
  }

  it('at a terminal: two messages, each question answered inline, the session id printed, the transcript right after', async () => {
    const terminal = inTerminal([CLI, 'chat', '--replay', scriptFile, '--timeout', '60s'], env());
    await terminal.waitFor(/Session ses_[0-9a-z]+[\s\S]*you> /);
    let mark = terminal.screen().length;
    terminal.type('Paint the fence\r');
    await terminal.waitFor(after(mark, 'Which colour shall I use\\?[\\s\\S]*Type my own answer'));
    terminal.type('2');
    terminal.type('\r');
    await terminal.waitFor(after(mark, 'Painted it\\.[\\s\\S]*you> '));
    mark = terminal.screen().length;
    terminal.type('Paint the shed\r');
    await terminal.waitFor(after(mark, 'Which colour shall I use\\?[\\s\\S]*Type my own answer'));
    terminal.type('green');
    terminal.type('\r');
    await terminal.waitFor(after(mark, 'Painted it\\.[\\s\\S]*you> '));
    terminal.type('/exit\r');
    expect(await terminal.exited).toBe(0);
    const screen = terminal.screen();
    const sessionId = /Session (ses_[0-9a-z]+)/.exec(screen)?.[1] as string;
    expect(screen).toContain(`tether chat --session ${sessionId}`);
    expect(await transcriptOf(sessionId)).toEqual([
      ['user', 'Paint the fence'],
      ['assistant', 'call clarify'],
      ['tool', expect.stringContaining('blue')],
      ['assistant', 'Painted it.'],
      ['user', 'Paint the shed'],
      ['assistant', 'call clarify'],
      ['tool', expect.stringContaining('green')],
      ['assistant', 'Painted it.'],
    ]);
  }, 60_000);

  it('from a pipe: one message a line, a question answered by the next line; then --session continues without replaying', async () => {
    const first = await runPiped(
      ['chat', '--replay', scriptFile, '--timeout', '60s'],
      'Paint the fence\n1\nPaint the shed\nyellow\n',
    );
    expect(first.code).toBe(0);
    const sessionId = /Session (ses_[0-9a-z]+)/.exec(first.out)?.[1] as string;
    expect(sessionId).toBeDefined();
    expect(first.out.match(/Which colour shall I use\?/g)).toHaveLength(2);
    expect(first.out.match(/Painted it\./g)).toHaveLength(2);
    expect(first.out).toContain('you> Paint the shed');
    expect(first.out).toContain('answered: red');

    const second = await runPiped(
      ['chat', '--session', sessionId, '--replay', scriptFile],
      'Paint the gate\n2\n',
    );
    expect(second.code).toBe(0);
    // Only this chat's run is shown: the session's earlier runs are not replayed.
    expect(second.out.match(/Painted it\./g)).toHaveLength(1);
    expect(second.out).toContain(`Session ${sessionId}`);
    const transcript = await transcriptOf(sessionId);
    expect(transcript.filter(([role]) => role === 'user')).toEqual([
      ['user', 'Paint the fence'],
      ['user', 'Paint the shed'],
      ['user', 'Paint the gate'],
    ]);
    expect(transcript.filter(([role]) => role === 'tool').map(([, content]) => content)).toEqual([
      expect.stringContaining('red'),
      expect.stringContaining('yellow'),
      expect.stringContaining('blue'),
    ]);

    // The input ending while a question waits: exit 1, the run left waiting.
    const third = await runPiped(
      ['chat', '--session', sessionId, '--replay', scriptFile],
      'Paint the door\n',
    );
    expect(third.code).toBe(1);
    expect(third.err).toContain('input ended while a question waits');
    expect((await client.sessions.get(sessionId)).status).toBe('waiting_for_input');
  }, 60_000);

  it("with --json: events as JSON lines on stdout, the chat's own lines on stderr; /new starts another session", async () => {
    const { code, out, err } = await runPiped(
      ['chat', '--json', '--replay', scriptFile],
      'Paint the fence\n2\n/new\nPaint the shed\nteal\n',
    );
    expect(code).toBe(0);
    const events = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as SessionEvent);
    const completed = events.filter((e) => e.type === 'run.completed');
    expect(completed).toHaveLength(2);
    expect(events.filter((e) => e.type === 'clarify.answered').map((e) => e.data)).toEqual([
      expect.objectContaining({ answer: 'blue' }),
      expect.objectContaining({ answer: 'teal' }),
    ]);
    const sessionIds = [...err.matchAll(/Session (ses_[0-9a-z]+)\n/g)].map((m) => m[1] as string);
    expect(new Set(sessionIds).size).toBe(2);
    for (const id of sessionIds)
      expect(await client.sessions.get(id)).toMatchObject({ runs: 1, status: 'idle' });
  }, 60_000);

  it('at a terminal: Ctrl-C at a question cancels the run, a second Ctrl-C quits', async () => {
    const terminal = inTerminal([CLI, 'chat', '--replay', scriptFile, '--timeout', '60s'], env());
    await terminal.waitFor(/you> /);
    const mark = terminal.screen().length;
    terminal.type('Paint the fence\r');
    await terminal.waitFor(after(mark, 'Which colour shall I use\\?[\\s\\S]*Type my own answer'));
    terminal.type('\u0003');
    await terminal.waitFor(after(mark, 'Cancelling the run[\\s\\S]*Cancelled[\\s\\S]*you> '));
    terminal.type('\u0003');
    expect(await terminal.exited).toBe(130);
    const sessionId = /Session (ses_[0-9a-z]+)/.exec(terminal.screen())?.[1] as string;
    const session = await client.sessions.get(sessionId);
    expect(session).toMatchObject({ status: 'idle', runs: 1 });
    expect((await client.get(session.lastRunId as string)).status).toBe('cancelled');
  }, 60_000);
});

describe('tether chat with --require-approval', () => {
  it('at a terminal: a held write_file is edited at the prompt, after an edit the API refuses', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-chat-'));
    try {
      const scriptFile = join(dir, 'script.json');
      const script: ReplayScript = [
        { toolCalls: [call('write_file', { path: 'NOTES.md', content: 'v2\n' })] },
        { content: 'Noted.' },
      ];
      await writeFile(scriptFile, JSON.stringify(script));
      const terminal = inTerminal([CLI, 'chat', '--replay', scriptFile, '--require-approval', 'write_file'], {
        TETHER_URL: stack.baseUrl,
        TETHER_API_KEY: API_KEY,
        NO_COLOR: '1',
      });
      await terminal.waitFor(/you> /);
      terminal.type('Note the release\r');
      await terminal.waitFor(
        /write_file waits for approval \(tools: write_file\)[\s\S]*\| v2[\s\S]*\[a\]pprove/,
      );
      terminal.type('e');
      await terminal.waitFor(/> \{"path":"NOTES\.md","content":"v2\\n"\}/);
      // Ctrl-U clears the line; the API refuses content that is not a string, naming the field.
      terminal.type('\u0015{"path": "NOTES.md", "content": 2}\r');
      await terminal.waitFor(
        /The server refused it: arguments: [\s\S]*content[\s\S]*ERR_APPROVAL_ARGUMENTS_INVALID/,
      );
      terminal.type('\u0015{"path": "NOTES.md", "content": "v2, reviewed\\n"}\r');
      await terminal.waitFor(/write_file edited by [\s\S]*Noted\.[\s\S]*you> /);
      terminal.type('/exit\r');
      expect(await terminal.exited).toBe(0);
      const sessionId = /Session (ses_[0-9a-z]+)/.exec(terminal.screen())?.[1] as string;
      const session = await client.sessions.get(sessionId);
      const runId = session.lastRunId as string;
      expect(await (await client.file(runId, 'NOTES.md')).text()).toBe('v2, reviewed\n');
      const resolved = (await client.events(runId, { limit: 500 })).data.filter(
        (event) => event.type === 'approval.resolved',
      );
      expect(resolved.map((event) => event.data)).toEqual([
        expect.objectContaining({
          decision: 'edit',
          arguments: { path: 'NOTES.md', content: 'v2, reviewed\n' },
        }),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('from a pipe: prints how to decide with tether approve and waits for the decision', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-chat-'));
    try {
      const scriptFile = join(dir, 'script.json');
      const script: ReplayScript = [
        { toolCalls: [call('bash', { command: 'echo shipped' })] },
        { content: 'Done.' },
      ];
      await writeFile(scriptFile, JSON.stringify(script));
      const chat = runPiped(
        ['chat', '--replay', scriptFile, '--require-approval', 'bash'],
        'Ship it\n',
        async (out) => {
          const hint = /decide with: tether approve (run_\S+) (apr_\S+)/.exec(out);
          if (!hint) return false;
          const approve = spawn(
            process.execPath,
            [CLI, 'approve', hint[1] as string, hint[2] as string, '--reject', 'Not today'],
            {
              env: { PATH: process.env.PATH ?? '', TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY },
              stdio: 'ignore',
            },
          );
          expect(await new Promise((resolve) => approve.on('exit', resolve))).toBe(0);
          return true;
        },
      );
      const { code, out } = await chat;
      expect(code).toBe(0);
      expect(out).toContain('$ echo shipped');
      expect(out).toMatch(/bash rejected by \S+: Not today\n[\s\S]*Done\./);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('tether chat, Ctrl-C while a run works', () => {
  it('cancels the run (the signal reaches the CLI from the terminal), then goes on with the conversation', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-chat-'));
    try {
      const scriptFile = join(dir, 'script.json');
      // The command outlasts the test: only the cancel ends it (a short sleep raced the Ctrl-C on a
      // loaded machine, and the run completed first).
      const script: ReplayScript = [
        { toolCalls: [call('bash', { command: 'sleep 30' })] },
        { content: 'Slept.' },
      ];
      await writeFile(scriptFile, JSON.stringify(script));
      const terminal = inTerminal([CLI, 'chat', '--replay', scriptFile], {
        TETHER_URL: stack.baseUrl,
        TETHER_API_KEY: API_KEY,
        NO_COLOR: '1',
      });
      await terminal.waitFor(/you> /);
      terminal.type('Take a nap\r');
      await terminal.waitFor(/> bash command=sleep 30/);
      terminal.type('\u0003');
      await terminal.waitFor(/Cancelling the run[\s\S]*Cancelled[\s\S]*you> /);
      expect(terminal.screen()).not.toContain('Slept.');
      terminal.type('/exit\r');
      // The terminal's Ctrl-C reached the shell that `script` runs the CLI in too: the exit code is the shell's.
      await terminal.exited;
      expect(terminal.screen()).toMatch(
        /you> \S*\/exit\r\r\nSession ses_[0-9a-z]+: continue with tether chat --session/,
      );
      const sessionId = /Session (ses_[0-9a-z]+)/.exec(terminal.screen())?.[1] as string;
      const session = await client.sessions.get(sessionId);
      expect(session).toMatchObject({ status: 'idle', runs: 1 });
      expect((await client.get(session.lastRunId as string)).status).toBe('cancelled');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/**
 * Runs the CLI with `input` piped to its stdin; resolves with its exit code and output. `onOutput`
 * is told the output so far as it grows, until it answers true.
 */
async function runPiped(
  args: string[],
  input: string,
  onOutput?: (out: string) => Promise<boolean>,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY, NO_COLOR: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let watching = onOutput;
  let busy = false;
  let failed: unknown;
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (!watching || busy) return;
    busy = true;
    watching(out).then(
      (done) => {
        busy = false;
        if (done) watching = undefined;
      },
      (error: unknown) => {
        failed = error;
        watching = undefined;
        child.kill();
      },
    );
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (failed !== undefined) throw failed;
  return { code, out, err };
}
