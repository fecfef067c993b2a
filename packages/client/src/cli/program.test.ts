/**
 * The `tether` command line driven through `runCli` with recorded streams,
 * against the fake API on a real port: `run` (JSON lines, the human view, the
 * interactive clarify prompt on plain streams, --files, --timeout), `runs`,
 * `show`, `logs`, `answer`, `cancel`, usage errors and an unreachable server.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeApi, type FakeRun } from '../testing/fake-api.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import type { CliIo } from './io.js';
import { runCli } from './program.js';

let api: FakeApi;
let tmp: string | undefined;

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  await api.start();
});

afterEach(async () => {
  await api.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
  tmp = undefined;
});

function terminal(options: { tty?: boolean; env?: Record<string, string> } = {}) {
  const stdout = new RecordingOutput(options.tty ?? false);
  const stderr = new RecordingOutput(false);
  const stdin = new KeyboardInput(options.tty ?? false);
  const io: CliIo = {
    stdout,
    stderr,
    stdin,
    env: { TETHER_URL: api.baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1', ...options.env },
  };
  return { io, stdout, stderr, stdin };
}

/** Plays a short successful run: a step with a tool call, a todo list, streamed text. */
function playSuccess(run: FakeRun): void {
  const id = run.run.id;
  api.append(id, 'run.started', { attempt: 1, workerId: 'w1' });
  api.append(id, 'attempt.started', { attempt: 1, resumed: false, step: 0 });
  api.append(id, 'message', {
    role: 'assistant',
    content: '',
    toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"README.md"}' }],
  });
  api.append(id, 'tool.call', { callId: 'c1', name: 'read_file', arguments: '{"path":"README.md"}' });
  api.append(id, 'tool.result', {
    callId: 'c1',
    name: 'read_file',
    ok: true,
    content: '# Tether\nline 2\nline 3\n',
  });
  api.append(id, 'todo.updated', {
    todos: [
      { id: 't1', content: 'Read the README', status: 'completed' },
      { id: 't2', content: 'Write the summary', status: 'in_progress' },
    ],
  });
  api.append(id, 'message.delta', { text: 'The README ' });
  api.append(id, 'message.delta', { text: 'describes Tether.' });
  api.append(id, 'message', { role: 'assistant', content: 'The README describes Tether.', toolCalls: [] });
  api.append(id, 'usage', { inputTokens: 120, outputTokens: 30, totalTokens: 150 });
  run.files.set('SUMMARY.md', 'Tether runs agents.\n');
  api.append(id, 'run.completed', { output: 'The README describes Tether.' });
}

function askQuestion(run: FakeRun, expiresInMs = 60_000): void {
  api.append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
  api.append(run.run.id, 'clarify.requested', {
    requestId: 'q1',
    question: 'Which format?',
    choices: ['Markdown', 'HTML'],
    expiresAt: new Date(Date.now() + expiresInMs).toISOString(),
  });
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}

describe('tether run --json', () => {
  it('prints every event as one JSON line and nothing else, exit 0', async () => {
    api.onSubmit = playSuccess;
    const { io, stdout, stderr } = terminal();
    const code = await runCli(['run', 'Summarise the README', '--json'], io);
    expect(code).toBe(0);
    const lines = stdout.plain.trimEnd().split('\n');
    const events = lines.map((line) => JSON.parse(line) as RunEvent);
    expect(events).toEqual(api.runs.get('run_0001')?.events);
    expect(events.at(-1)?.type).toBe('run.completed');
    expect(stderr.plain).toBe('');
  });

  it('exits 1 when the run fails, and does not prompt for questions', async () => {
    api.onSubmit = (run) => {
      askQuestion(run);
      api.append(run.run.id, 'clarify.timed_out', { requestId: 'q1' });
      api.append(run.run.id, 'run.failed', {
        error: { code: 'ERR_AGENT_MAX_STEPS', message: 'Too many steps' },
      });
    };
    const { io, stdout } = terminal({ tty: true });
    const code = await runCli(['run', 'x', '--json'], io);
    expect(code).toBe(1);
    const types = stdout.plain
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as RunEvent).type);
    expect(types).toEqual([
      'run.queued',
      'run.started',
      'clarify.requested',
      'clarify.timed_out',
      'run.failed',
    ]);
    expect(api.requests.some((r) => r.path.includes('/clarify/'))).toBe(false);
  });

  it('sends model, locale, clarify timeout, files and an idempotency key', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'tether-cli-'));
    await mkdir(join(tmp, 'src'));
    await writeFile(join(tmp, 'src', 'a.ts'), 'export {};\n');
    await mkdir(join(tmp, 'node_modules'));
    await writeFile(join(tmp, 'node_modules', 'x.js'), 'no');
    api.onSubmit = (run) => api.append(run.run.id, 'run.cancelled', {});
    const { io } = terminal();
    const code = await runCli(
      ['run', 'fix it', '--model', 'fast', '--locale', 'zh', '--timeout', '10m', '--files', tmp, '--json'],
      io,
    );
    expect(code).toBe(1);
    const submit = api.requests.find((r) => r.method === 'POST' && r.path === '/v1/runs');
    expect(submit?.body).toEqual({
      input: 'fix it',
      model: { profile: 'fast' },
      locale: 'zh',
      clarify: { timeoutMs: 600_000 },
      files: { 'src/a.ts': 'export {};\n' },
    });
    expect(submit?.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(submit?.headers.authorization).toBe('Bearer key-a');
  });

  it('sends a replay script from --replay, and refuses it with --model or when it is not a JSON array', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'tether-cli-'));
    const script = [{ content: 'done' }];
    await writeFile(join(tmp, 'script.json'), JSON.stringify(script));
    await writeFile(join(tmp, 'bad.json'), '{"content": "x"}');
    api.onSubmit = (run) => api.append(run.run.id, 'run.completed', { output: 'done' });
    const { io } = terminal();
    expect(await runCli(['run', 'x', '--replay', join(tmp, 'script.json'), '--json'], io)).toBe(0);
    expect(api.requests[0]?.body).toEqual({ input: 'x', model: { provider: 'replay', script } });
    for (const argv of [
      ['run', 'x', '--replay', join(tmp, 'script.json'), '--model', 'fast'],
      ['run', 'x', '--replay', join(tmp, 'bad.json')],
      ['run', 'x', '--replay', join(tmp, 'missing.json')],
    ]) {
      const other = terminal();
      expect(await runCli(argv, other.io)).toBe(2);
      expect(other.stderr.plain).toMatch(/--replay/);
    }
    expect(api.requests).toHaveLength(2); // the submit and its stream only
  });
});

describe('tether run (human view)', () => {
  it('shows steps, tool calls with short results, todos, streamed text, the output and the files', async () => {
    api.onSubmit = playSuccess;
    const { io, stdout } = terminal();
    const code = await runCli(['run', 'Summarise the README'], io);
    expect(code).toBe(0);
    const out = stdout.plain;
    expect(out).toContain('Run run_0001 submitted');
    expect(out).toContain('-- step 1 --');
    expect(out).toContain('> read_file path=README.md');
    expect(out).toContain('ok # Tether (+2 lines)');
    expect(out).toMatch(/Todo\n\s+\[x\] Read the README\n\s+\[>\] Write the summary/);
    expect(out).toContain('-- step 2 --\nThe README describes Tether.\n');
    expect(out).toContain('\nCompleted\ntokens: 120 in, 30 out\n');
    expect(out).toMatch(/Files in the workspace \(1\)\n\s+SUMMARY\.md\s+20 B new/);
    // The final answer is shown once, as it streamed: not again from the `message` event, nor as the output.
    expect(out.split('The README describes Tether.').length - 1).toBe(1);
  });

  it('without a terminal, prints the question with how to answer it, and goes on', async () => {
    api.onSubmit = (run) => {
      askQuestion(run);
      api.append(run.run.id, 'clarify.timed_out', { requestId: 'q1' });
      api.append(run.run.id, 'run.completed', { output: 'Went with Markdown.' });
    };
    const { io, stdout } = terminal();
    const code = await runCli(['run', 'x'], io);
    expect(code).toBe(0);
    expect(stdout.plain).toMatch(/\? Which format\? \(\d:\d\d to answer\)\n\s+1\. Markdown\n\s+2\. HTML/);
    expect(stdout.plain).toContain('answer with: tether answer run_0001 q1 "your answer"');
    expect(stdout.plain).toContain('No answer in time');
  });

  it('asks the question at the terminal, posts the choice, and follows to the end', async () => {
    api.onSubmit = (run) => askQuestion(run);
    api.onAnswer = (run, answer) => {
      api.append(run.run.id, 'message', { role: 'assistant', content: `Using ${answer}.`, toolCalls: [] });
      api.append(run.run.id, 'run.completed', { output: `Wrote ${answer}.` });
    };
    const { io, stdout, stdin } = terminal({ tty: true });
    const done = runCli(['run', 'write docs'], io);
    await stdout.waitFor('Type my own answer');
    expect(stdout.plain).toMatch(/\? Which format\? \d:\d\d left/);
    stdin.type(KeyboardInput.keys.down);
    await stdout.waitFor('> 2. HTML');
    stdin.type(KeyboardInput.keys.enter);
    expect(await done).toBe(0);
    const answer = api.requests.find((r) => r.path === '/v1/runs/run_0001/clarify/q1');
    expect(answer?.body).toEqual({ answer: 'HTML' });
    // The prompt shows the question; the log line for it is not printed as well.
    expect(stdout.plain).not.toContain('to answer)');
    expect(stdout.plain).toMatch(/answered: HTML[\s\S]*Using HTML\.[\s\S]*Completed\nWrote HTML\./);
  });

  it('takes a free-text answer', async () => {
    api.onSubmit = (run) => askQuestion(run);
    api.onAnswer = (run, answer) => api.append(run.run.id, 'run.completed', { output: answer });
    const { io, stdout, stdin } = terminal({ tty: true });
    const done = runCli(['run', 'write docs'], io);
    await stdout.waitFor('Type my own answer');
    stdin.type('plain text, please');
    await stdout.waitFor('> plain text, please');
    stdin.type(KeyboardInput.keys.enter);
    expect(await done).toBe(0);
    expect(api.requests.find((r) => r.path.endsWith('/clarify/q1'))?.body).toEqual({
      answer: 'plain text, please',
    });
  });

  it('stops prompting when the question is answered elsewhere', async () => {
    api.onSubmit = (run) => askQuestion(run);
    const { io, stdout } = terminal({ tty: true });
    const done = runCli(['run', 'write docs'], io);
    await stdout.waitFor('Type my own answer');
    const run = api.runs.get('run_0001');
    if (!run) throw new Error('no run');
    api.append(run.run.id, 'clarify.answered', { requestId: 'q1', answer: 'Markdown' });
    api.append(run.run.id, 'run.completed', { output: 'ok' });
    expect(await done).toBe(0);
    // The prompt is replaced by the question alone, and the answer given elsewhere follows.
    expect(stdout.screen).toContain('? Which format?\n  answered: Markdown\n');
    expect(stdout.screen).not.toContain('Type my own answer');
    expect(stdout.screen).not.toMatch(/left/);
    expect(api.requests.some((r) => r.path.endsWith('/clarify/q1'))).toBe(false);
  });

  it('stops prompting at the deadline and lets the run go on', async () => {
    api.onSubmit = (run) => askQuestion(run, 400);
    const { io, stdout } = terminal({ tty: true });
    const done = runCli(['run', 'write docs'], io);
    await stdout.waitFor('(no answer in time)');
    const run = api.runs.get('run_0001');
    if (!run) throw new Error('no run');
    api.append(run.run.id, 'clarify.timed_out', { requestId: 'q1' });
    api.append(run.run.id, 'run.completed', { output: 'Decided alone.' });
    expect(await done).toBe(0);
    expect(stdout.plain).toContain('(no answer in time)');
    expect(api.requests.some((r) => r.path.endsWith('/clarify/q1'))).toBe(false);
  });
});

/** Plays a crew parent: it delegates two tasks, waits, one child completes and one escalates, and it completes. */
function playCrew(run: FakeRun): void {
  const id = run.run.id;
  const goals = ['Write the parser', 'Write the tests'];
  api.append(id, 'run.started', { attempt: 1, workerId: 'w1' });
  api.append(id, 'tool.call', {
    callId: 'c1',
    name: 'delegate_parallel',
    arguments: JSON.stringify({ tasks: goals.map((goal) => ({ goal })) }),
  });
  const children = goals.map((goal, index) => {
    const child = api.createChild(id, index, { input: goal });
    api.append(id, 'child.started', { childRunId: child.run.id, index, goal });
    return child;
  });
  const [parser, tests] = children.map((c) => c.run.id);
  if (!parser || !tests) throw new Error('no children');
  api.append(parser, 'run.completed', { output: 'Parser written.' });
  api.append(id, 'child.finished', {
    childRunId: parser,
    index: 0,
    status: 'completed',
    summary: 'Parser written.',
  });
  api.append(tests, 'run.completed', { output: 'No test runner here.' });
  api.append(id, 'child.finished', {
    childRunId: tests,
    index: 1,
    status: 'escalated',
    summary: 'No test runner here.',
  });
  api.append(id, 'run.started', { attempt: 2, workerId: 'w2' });
  api.append(id, 'tool.result', { callId: 'c1', name: 'delegate_parallel', ok: true, content: '[]' });
  api.append(id, 'run.completed', { output: 'Parser done; tests escalated.' });
}

describe('crew runs', () => {
  it("tether run shows the parent's children as they start and end, and the wait between", async () => {
    api.onSubmit = playCrew;
    const { io, stdout } = terminal();
    expect(await runCli(['run', 'Build the parser'], io)).toBe(0);
    expect(stdout.plain).toContain(
      [
        '    -> child 0 started: Write the parser (run_0002)',
        '    -> child 1 started: Write the tests (run_0003)',
        '    waiting for 2 children',
        '    -> child 0 completed: Parser written. (run_0002)',
        '    -> child 1 escalated: No test runner here. (run_0003)',
        'started: attempt 2 on w2',
      ].join('\n'),
    );
    expect(stdout.plain).toMatch(/Completed\nParser done; tests escalated\./);
  });

  it('tether logs prints the same lines from the log, and --json the events', async () => {
    const run = api.createRun({ input: 'Build the parser' }, 'tenant-a');
    playCrew(run);
    const human = terminal();
    expect(await runCli(['logs', run.run.id], human.io)).toBe(0);
    expect(human.stdout.plain).toContain('    waiting for 2 children\n    -> child 0 completed');
    const json = terminal();
    expect(await runCli(['logs', run.run.id, '--json'], json.io)).toBe(0);
    const types = json.stdout.plain
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as RunEvent).type);
    expect(types.filter((t) => t.startsWith('child.'))).toEqual([
      'child.started',
      'child.started',
      'child.finished',
      'child.finished',
    ]);
  });
});

describe('crew runs: tether show and tether runs', () => {
  it("shows a crew parent's tree of children under its fields, one GET per run", async () => {
    const parent = api.createRun({ input: 'Build the parser' }, 'tenant-a');
    playCrew(parent);
    const before = api.requests.length;
    const { io, stdout } = terminal();
    expect(await runCli(['show', parent.run.id], io)).toBe(0);
    expect(stdout.plain).toContain(
      [
        '',
        'run_0001  completed  Parser done; tests escalated.',
        '|- [0] run_0002  completed  Parser written.',
        '`- [1] run_0003  completed  No test runner here.',
        '',
        'Output',
        'Parser done; tests escalated.',
      ].join('\n'),
    );
    expect(api.requests.slice(before).map((r) => r.path)).toEqual([
      '/v1/runs/run_0001',
      '/v1/runs/run_0002',
      '/v1/runs/run_0003',
    ]);
    // --json prints the run as the API returned it, children listed, and reads nothing more.
    const json = terminal();
    const seen = api.requests.length;
    expect(await runCli(['show', parent.run.id, '--json'], json.io)).toBe(0);
    expect(JSON.parse(json.stdout.plain)).toMatchObject({
      id: 'run_0001',
      children: [
        { id: 'run_0002', index: 0, status: 'completed' },
        { id: 'run_0003', index: 1, status: 'completed' },
      ],
    });
    expect(api.requests.length - seen).toBe(1);
  });

  it('shows a parent waiting for its children, with the tree, and a child with its parent', async () => {
    const parent = api.createRun({ input: 'Build' }, 'tenant-a');
    api.append(parent.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    const a = api.createChild(parent.run.id, 0);
    const b = api.createChild(parent.run.id, 1);
    const grandchild = api.createChild(a.run.id, 0);
    api.append(parent.run.id, 'child.started', { childRunId: a.run.id, index: 0, goal: 'a' });
    api.append(parent.run.id, 'child.started', { childRunId: b.run.id, index: 1, goal: 'b' });
    api.append(a.run.id, 'child.started', { childRunId: grandchild.run.id, index: 0, goal: 'a0' });
    api.append(b.run.id, 'run.failed', { error: { code: 'ERR_AGENT_MAX_STEPS', message: 'Too many steps' } });

    const { io, stdout } = terminal();
    expect(await runCli(['show', parent.run.id], io)).toBe(0);
    expect(stdout.plain).toMatch(/^run_0001 {2}waiting_for_children\n/);
    expect(stdout.plain).toContain(
      [
        'run_0001  waiting_for_children  waiting for 1 child',
        '|- [0] run_0002  waiting_for_children  waiting for 1 child',
        '|  `- [0] run_0004  queued',
        '`- [1] run_0003  failed                ERR_AGENT_MAX_STEPS: Too many steps',
      ].join('\n'),
    );

    const child = terminal();
    expect(await runCli(['show', grandchild.run.id], child.io)).toBe(0);
    expect(child.stdout.plain).toContain('parent    run_0002 (depth 2, root run_0001)');
    expect(child.stdout.plain).not.toContain('|-');

    const list = terminal();
    expect(await runCli(['runs', '--status', 'waiting_for_children'], list.io)).toBe(0);
    expect(list.stdout.plain).toMatch(/run_0002\s+waiting_for_children\s+.*waiting for 1 child\n/);
    expect(list.stdout.plain).toMatch(/run_0001\s+waiting_for_children\s+.*waiting for 1 child\n/);
  });

  it('keeps a child removed while the tree is read as its parent listed it', async () => {
    const parent = api.createRun({ input: 'Build' }, 'tenant-a');
    playCrew(parent);
    const removeLater = (request: { path: string }) => {
      if (request.path !== '/v1/runs/run_0002') return;
      api.off('request', removeLater);
      api.removeRun('run_0003');
    };
    api.on('request', removeLater);
    const { io, stdout } = terminal();
    expect(await runCli(['show', parent.run.id], io)).toBe(0);
    expect(stdout.plain).toContain('`- [1] run_0003  completed  (gone: no longer stored)');
    // Once gone, the parent no longer lists it.
    const again = terminal();
    expect(await runCli(['show', parent.run.id], again.io)).toBe(0);
    expect(again.stdout.plain).toContain(
      'run_0001  completed  Parser done; tests escalated.\n`- [0] run_0002',
    );
  });
});

describe('errors and exit codes', () => {
  it('exits 2 on usage errors: no task, a bad --timeout, a bad --locale, an unknown command', async () => {
    for (const argv of [
      ['run'],
      ['run', 'x', '--timeout', 'soon'],
      ['run', 'x', '--locale', 'fr'],
      ['frobnicate'],
      ['run', '   '],
    ]) {
      const { io, stderr } = terminal();
      expect(await runCli(argv, io), argv.join(' ')).toBe(2);
      expect(stderr.plain, argv.join(' ')).toMatch(/error/);
    }
    expect(api.requests).toHaveLength(0);
  });

  it('exits 2 when --files is over 1 MiB, before sending anything', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'tether-cli-'));
    await writeFile(join(tmp, 'big.txt'), 'x'.repeat(1024 * 1024 + 1));
    const { io, stderr } = terminal();
    expect(await runCli(['run', 'x', '--files', tmp], io)).toBe(2);
    expect(stderr.plain).toContain('over the 1 MiB limit');
    expect(api.requests).toHaveLength(0);
  });

  it('exits 3 when the server is unreachable, saying where it looked and how to set TETHER_URL', async () => {
    const port = await closedPort();
    const { io, stderr } = terminal({ env: { TETHER_URL: `http://127.0.0.1:${port}` } });
    expect(await runCli(['runs'], io)).toBe(3);
    expect(stderr.plain).toContain(`Cannot reach the Tether API at http://127.0.0.1:${port}`);
    expect(stderr.plain).toContain('TETHER_URL');
  });

  it('exits 2 on a TETHER_URL that is not a URL', async () => {
    const { io, stderr } = terminal({ env: { TETHER_URL: 'not a url' } });
    expect(await runCli(['runs'], io)).toBe(2);
    expect(stderr.plain).toContain('TETHER_URL');
  });

  it('exits 1 with the API message on 401, with a hint', async () => {
    const { io, stderr } = terminal({ env: { TETHER_API_KEY: 'wrong' } });
    expect(await runCli(['runs'], io)).toBe(1);
    expect(stderr.plain).toContain('Missing or unknown API key (ERR_UNAUTHORIZED, HTTP 401)');
    expect(stderr.plain).toContain('TETHER_API_KEY');
  });

  it('prefers --url and --api-key over the environment', async () => {
    const port = await closedPort();
    const { io } = terminal({ env: { TETHER_URL: `http://127.0.0.1:${port}`, TETHER_API_KEY: 'wrong' } });
    expect(await runCli(['runs', '--url', api.baseUrl, '--api-key', 'key-a'], io)).toBe(0);
  });

  it('exits 130 and says how to go on when interrupted while following', async () => {
    api.onSubmit = (run) => api.append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    const controller = new AbortController();
    const { io, stdout, stderr } = terminal();
    const done = runCli(['run', 'x'], { ...io, signal: controller.signal });
    await stdout.waitFor('started: attempt 1');
    controller.abort(new Error('interrupted'));
    expect(await done).toBe(130);
    expect(stderr.plain).toContain('tether logs run_0001 --follow');
  });
});

describe('tether runs, show, logs, answer, cancel', () => {
  it('lists runs with status, duration, task and a pending question', async () => {
    const a = api.createRun({ input: '\n  Summarise the report\nin three lines' }, 'tenant-a');
    const b = api.createRun({ input: 'b' }, 'tenant-a');
    // The fake's events are a millisecond apart: the run took 1ms. (A live run shows how long so far.)
    api.append(a.run.id, 'run.started', { attempt: 1, workerId: 'w' });
    api.append(a.run.id, 'run.completed', { output: 'ok' });
    askQuestion(b);
    api.createRun({ input: 'c' }, 'tenant-a');
    const { io, stdout } = terminal();
    expect(await runCli(['runs'], io)).toBe(0);
    // Not started yet: no duration.
    expect(stdout.plain).toMatch(/\nrun_0003\s+queued\s+\S+ ago\s+-\s+c\n/);
    expect(stdout.plain).toMatch(
      /TOOK\s+TASK\nrun_0003.*\nrun_0002\s+waiting_for_input\s+.*\s+b {2}\? Which format\?\nrun_0001\s+completed\s+.*\s1ms\s+Summarise the report\n/,
    );
    const json = terminal();
    expect(await runCli(['runs', '--json', '--status', 'completed', '--limit', '5'], json.io)).toBe(0);
    expect(JSON.parse(json.stdout.plain)).toMatchObject({ data: [{ id: 'run_0001', status: 'completed' }] });
  });

  it('shows a run with its pending question and how to answer', async () => {
    const run = api.createRun({ input: 'a' }, 'tenant-a');
    askQuestion(run);
    run.run.model = { profile: 'default', name: 'gpt-4.1-mini' };
    const { io, stdout } = terminal();
    expect(await runCli(['show', run.run.id], io)).toBe(0);
    expect(stdout.plain).toContain('run_0001  waiting_for_input');
    expect(stdout.plain).toMatch(/\ntask\s+a\n/);
    expect(stdout.plain).toMatch(/\nmodel\s+gpt-4\.1-mini \(profile default\)\n/);
    expect(stdout.plain).toContain('tether answer run_0001 q1 "your answer"');
    const missing = terminal();
    expect(await runCli(['show', 'run_9999'], missing.io)).toBe(1);
    expect(missing.stderr.plain).toContain('Run run_9999 not found (ERR_RUN_NOT_FOUND, HTTP 404)');
  });

  it('shows the client tool calls a run waits on, in the list, in show and in its logs', async () => {
    const run = api.createRun({ input: 'a' }, 'tenant-a');
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    for (const [i, city] of ['Oslo', 'Rome'].entries()) {
      api.append(run.run.id, 'tool.requested', {
        requestId: `tcr_${i}`,
        callId: `c${i}`,
        name: 'get_weather',
        arguments: { city },
        expiresAt,
      });
    }
    const list = terminal();
    expect(await runCli(['runs'], list.io)).toBe(0);
    expect(list.stdout.plain).toMatch(
      /run_0001\s+waiting_for_input\s+.*waiting for tool output: get_weather, get_weather/,
    );
    const show = terminal();
    expect(await runCli(['show', run.run.id], show.io)).toBe(0);
    expect(show.stdout.plain).toContain('Waiting for client tool outputs');
    expect(show.stdout.plain).toContain('> get_weather city=Rome');
    expect(show.stdout.plain).toContain('request tcr_0: POST /v1/runs/run_0001/tool-outputs/tcr_0');
    const waiting = terminal();
    expect(await runCli(['logs', run.run.id], waiting.io)).toBe(0);
    expect(waiting.stdout.plain).toMatch(
      /get_weather waits for the client's output \(request tcr_0, \d+:\d\d left\)/,
    );
    expect(waiting.stdout.plain).toMatch(
      /get_weather waits for the client's output \(request tcr_1, \d+:\d\d left\)/,
    );
    api.append(run.run.id, 'tool.output_received', { requestId: 'tcr_0', isError: false });
    api.append(run.run.id, 'tool.timed_out', { requestId: 'tcr_1' });
    const logs = terminal();
    expect(await runCli(['logs', run.run.id], logs.io)).toBe(0);
    // Settled since: no time left is shown for them.
    expect(logs.stdout.plain).toContain(
      [
        "  … get_weather waited for the client's output (request tcr_0)",
        "  … get_weather waited for the client's output (request tcr_1)",
        '  client output received for tcr_0',
        '  No client output in time for tcr_1: the agent goes on without it.',
      ].join('\n'),
    );
    expect(logs.stdout.plain).not.toContain('left');
  });

  it('prints the events so far, and follows with --follow', async () => {
    const run = api.createRun({ input: 'a' }, 'tenant-a');
    api.append(run.run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    const snapshot = terminal();
    expect(await runCli(['logs', run.run.id, '--json'], snapshot.io)).toBe(0);
    expect(snapshot.stdout.plain.trimEnd().split('\n')).toHaveLength(2);

    const follow = terminal();
    const done = runCli(['logs', run.run.id, '--follow'], follow.io);
    await follow.stdout.waitFor('started: attempt 1');
    api.append(run.run.id, 'run.completed', { output: 'finished' });
    expect(await done).toBe(0);
    expect(follow.stdout.plain).toContain('Completed\nfinished');
  });

  it('shows a question of the past without the time that was left: answered, or its run cancelled', async () => {
    const answered = api.createRun({ input: 'a' }, 'tenant-a');
    askQuestion(answered);
    api.append(answered.run.id, 'clarify.answered', { requestId: 'q1', answer: 'HTML' });
    api.append(answered.run.id, 'run.completed', { output: 'Wrote HTML.' });
    const cancelled = api.createRun({ input: 'b' }, 'tenant-a');
    askQuestion(cancelled, 113_000);
    api.append(cancelled.run.id, 'run.cancelled', { reason: 'cancelled by request' });

    const first = terminal();
    expect(await runCli(['logs', answered.run.id], first.io)).toBe(0);
    expect(first.stdout.plain).toContain(
      '? Which format?\n    1. Markdown\n    2. HTML\n  answered: HTML\n\nCompleted\nWrote HTML.\n',
    );
    const second = terminal();
    expect(await runCli(['logs', cancelled.run.id], second.io)).toBe(0);
    expect(second.stdout.plain).toContain(
      '? Which format?\n    1. Markdown\n    2. HTML\n\nCancelled: cancelled by request\n',
    );
    // Following a run that has ended reads the same history, and exits as it ended.
    const follow = terminal();
    expect(await runCli(['logs', cancelled.run.id, '--follow'], follow.io)).toBe(1);
    expect(follow.stdout.plain).toBe(second.stdout.plain);
    for (const out of [first.stdout.plain, second.stdout.plain]) {
      expect(out).not.toContain('to answer');
      expect(out).not.toContain('tether answer');
    }
  });

  it('shows the question a run waits on now with the time left and how to answer, then follows on', async () => {
    const run = api.createRun({ input: 'a' }, 'tenant-a');
    askQuestion(run, 113_000);
    const snapshot = terminal();
    expect(await runCli(['logs', run.run.id], snapshot.io)).toBe(0);
    expect(snapshot.stdout.plain).toMatch(/\? Which format\? \(1:5\d to answer\)\n/);
    expect(snapshot.stdout.plain).toContain('answer with: tether answer run_0001 q1 "your answer"');

    const follow = terminal();
    const done = runCli(['logs', run.run.id, '--follow'], follow.io);
    await follow.stdout.waitFor('answer with:');
    api.append(run.run.id, 'clarify.answered', { requestId: 'q1', answer: 'Markdown' });
    api.append(run.run.id, 'run.completed', { output: 'ok' });
    expect(await done).toBe(0);
    // Each event once: the history from the pages, then the live ones from the stream.
    expect(follow.stdout.plain.match(/Which format/g)).toHaveLength(1);
    expect(follow.stdout.plain).toMatch(/answer with: .*\n {2}answered: Markdown\n\nCompleted\nok\n$/);
  });

  it('answers and cancels, with 409 as exit 1', async () => {
    const run = api.createRun({ input: 'a' }, 'tenant-a');
    askQuestion(run);
    const first = terminal();
    expect(await runCli(['answer', run.run.id, 'q1', 'Markdown'], first.io)).toBe(0);
    expect(first.stdout.plain).toContain('Answer sent');
    const second = terminal();
    expect(await runCli(['answer', run.run.id, 'q1', 'HTML'], second.io)).toBe(1);
    expect(second.stderr.plain).toContain('ERR_CLARIFY_NOT_PENDING, HTTP 409');

    const cancel = terminal();
    expect(await runCli(['cancel', run.run.id], cancel.io)).toBe(0);
    expect(run.run.status).toBe('cancelled');
    const again = terminal();
    expect(await runCli(['cancel', run.run.id], again.io)).toBe(1);
  });

  it("prints the package's version with --version and -V, exit 0, without a request", async () => {
    const { version } = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as {
      version: string;
    };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-V']) {
      const { io, stdout, stderr } = terminal();
      expect(await runCli([flag], io)).toBe(0);
      expect(stdout.plain).toBe(`${version}\n`);
      expect(stderr.plain).toBe('');
    }
    expect(api.requests).toHaveLength(0);
  });

  it('prints help with the environment and exit codes, exit 0', async () => {
    const { io, stdout } = terminal();
    expect(await runCli(['--help'], io)).toBe(0);
    expect(stdout.plain).toContain('TETHER_URL');
    expect(stdout.plain).toContain('3 server unreachable');
  });
});
