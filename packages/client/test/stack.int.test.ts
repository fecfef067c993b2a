import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReplayScript, RunEvent } from '@tether/protocol';
import { inTerminal, killAllSpawned } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherClient } from '../src/index.js';
import { API_KEY, type Stack, startCuttableProxy, startStack } from './stack.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

let stack: Stack;
beforeAll(async () => {
  stack = await startStack('client');
}, 30_000);
afterAll(async () => {
  await stack?.stop();
  await killAllSpawned();
});

async function allEvents(client: TetherClient, id: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await client.events(id, after ? { after } : {});
    events.push(...page.data);
    if (!page.nextCursor || page.data.length === 0) return events;
    after = page.nextCursor;
  }
}

describe('the SDK against the real API and a worker', () => {
  it('runs.runToCompletion answers every client tool call through onToolCall and resolves with the ended run', async () => {
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const weather = {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    };
    const asked: string[] = [];
    const run = await client.runs.runToCompletion(
      {
        input: 'weather in two cities',
        model: {
          provider: 'replay',
          script: [
            { toolCalls: [call('get_weather', { city: 'Oslo' }), call('get_weather', { city: 'Atlantis' })] },
            { toolCalls: [call('get_weather', { city: 'Rome' })] },
            { content: 'reported' },
          ],
        },
        tools: [weather],
      },
      {
        onToolCall: async ({ name, arguments: args }) => {
          asked.push(`${name}(${String(args.city)})`);
          if (args.city === 'Atlantis') throw new Error('no such city');
          return `sunny in ${String(args.city)}`;
        },
      },
    );
    expect(run.status).toBe('completed');
    expect(run.output).toBe('reported');
    expect(asked.sort()).toEqual(['get_weather(Atlantis)', 'get_weather(Oslo)', 'get_weather(Rome)']);
    const results = (await allEvents(client, run.id))
      .filter((event) => event.type === 'tool.result')
      .map((event) => event.data);
    expect(results).toEqual([
      { callId: 'call_0_0', name: 'get_weather', ok: true, content: 'sunny in Oslo' },
      { callId: 'call_0_1', name: 'get_weather', ok: false, content: 'no such city' },
      { callId: 'call_1_0', name: 'get_weather', ok: true, content: 'sunny in Rome' },
    ]);
    await expect(client.runs.runToCompletion({ input: 'x', tools: [weather] })).rejects.toThrow(/onToolCall/);
  });

  it('runs.runToCompletion rejects with the API error when an output cannot be posted (never an unhandled rejection)', async () => {
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const lookup = {
        name: 'lookup',
        description: 'Looks up',
        parameters: { type: 'object', properties: {} },
      };
      const attempt = client.runs.runToCompletion(
        {
          input: 'too much',
          model: { provider: 'replay', script: [{ toolCalls: [call('lookup', {})] }, { content: 'never' }] },
          tools: [lookup],
        },
        { onToolCall: async () => 'x'.repeat(100_001) },
      );
      await expect(attempt).rejects.toMatchObject({ status: 400 });
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('runs.runToCompletion decides each held call through onApprovalRequest: an edit runs, a rejection does not', async () => {
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const tools: string[] = [];
    const run = await client.runs.runToCompletion(
      {
        input: 'note it, then push',
        model: {
          provider: 'replay',
          script: [
            { toolCalls: [call('write_file', { path: 'NOTES.md', content: 'v2\n' })] },
            { toolCalls: [call('bash', { command: 'git push --force' })] },
            { content: 'done' },
          ],
        },
        approval: { tools: ['write_file'], bash: { ask: ['^git push'] } },
      },
      {
        onApprovalRequest: ({ tool, arguments: args }) => {
          tools.push(tool);
          if (tool === 'write_file') {
            return { decision: 'edit', arguments: { ...(args as object), content: 'v2, reviewed\n' } };
          }
          throw new Error('Never force-push');
        },
      },
    );
    expect(run.status).toBe('completed');
    expect(tools).toEqual(['write_file', 'bash']);
    expect(await (await client.file(run.id, 'NOTES.md')).text()).toBe('v2, reviewed\n');
    const events = await allEvents(client, run.id);
    expect(events.filter((e) => e.type === 'approval.resolved').map((e) => e.data)).toEqual([
      expect.objectContaining({ decision: 'edit' }),
      expect.objectContaining({ decision: 'reject', message: 'Never force-push' }),
    ]);
    const bash = events.find((e) => e.type === 'tool.result' && e.data.name === 'bash');
    expect(bash?.data).toMatchObject({ ok: false, content: expect.stringContaining('Never force-push') });
  });

  it('submits, streams through a forced disconnect without losing or repeating an event, answers, waits, and reads files', async () => {
    const proxy = await startCuttableProxy(stack.port);
    try {
      const client = new TetherClient({ baseUrl: proxy.url, apiKey: API_KEY });
      const script: ReplayScript = [
        { toolCalls: [call('bash', { command: 'cat in.txt' })] },
        { toolCalls: [call('bash', { command: 'echo two' })] },
        { toolCalls: [call('clarify', { question: 'Write the file?', choices: ['yes', 'no'] })] },
        { toolCalls: [call('write_file', { path: 'out/done.txt', content: 'written\n' })] },
        { content: 'finished' },
      ];
      const submitted = await client.submit({
        input: 'sdk end to end',
        model: { provider: 'replay', script },
        files: { 'in.txt': 'hello from the client\n' },
        clarify: { timeoutMs: 60_000 },
      });
      expect(submitted.status).toBe('queued');

      const seen: RunEvent[] = [];
      let cut = 0;
      for await (const event of client.stream(submitted.id)) {
        seen.push(event);
        if (seen.length === 4) cut = proxy.cutAll();
        if (event.type === 'clarify.requested') {
          await client.answer(submitted.id, (event.data as { requestId: string }).requestId, 'yes');
        }
      }
      expect(cut).toBeGreaterThan(0);
      expect(proxy.connections()).toBeGreaterThan(2);
      expect(seen.at(-1)?.type).toBe('run.completed');

      const run = await client.wait(submitted.id);
      expect(run).toMatchObject({ status: 'completed', output: 'finished' });
      const log = await allEvents(client, submitted.id);
      expect(seen.map((e) => e.id)).toEqual(log.map((e) => e.id));
      expect(log.find((e) => e.type === 'clarify.answered')?.data).toMatchObject({ answer: 'yes' });

      const files = await client.files(submitted.id);
      const paths = JSON.stringify(files);
      expect(paths).toContain('in.txt');
      expect(paths).toContain('done.txt');
      expect(await (await client.file(submitted.id, 'out/done.txt')).text()).toBe('written\n');
    } finally {
      await proxy.close();
    }
  }, 60_000);
});

describe('the tether CLI', () => {
  it('asks the clarify question at the terminal, takes the chosen answer, and ends with the output', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-cli-'));
    try {
      const scriptFile = join(dir, 'script.json');
      const script: ReplayScript = [
        { toolCalls: [call('clarify', { question: 'Which colour shall I use?', choices: ['red', 'blue'] })] },
        { content: 'Painted it.' },
      ];
      await writeFile(scriptFile, JSON.stringify(script));
      const terminal = inTerminal(
        [CLI, 'run', 'Paint the fence', '--replay', scriptFile, '--timeout', '60s'],
        {
          TETHER_URL: stack.baseUrl,
          TETHER_API_KEY: API_KEY,
          NO_COLOR: '1',
        },
      );
      await terminal.waitFor(/Which colour shall I use\?/);
      await terminal.waitFor(/blue/);
      terminal.type('2');
      terminal.type('\r');
      await terminal.waitFor(/Painted it\./);
      expect(await terminal.exited).toBe(0);
      const runId = /run_[0-9a-z]{26}/.exec(terminal.screen())?.[0];
      expect(runId).toBeDefined();
      const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
      const log = await allEvents(client, runId as string);
      expect(log.find((e) => e.type === 'clarify.answered')?.data).toMatchObject({ answer: 'blue' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('prints events as JSON lines with --json', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-cli-'));
    try {
      const scriptFile = join(dir, 'script.json');
      await writeFile(
        scriptFile,
        JSON.stringify([{ toolCalls: [call('bash', { command: 'echo hi' })] }, { content: 'ok' }]),
      );
      const child = spawn(process.execPath, [CLI, 'run', 'say hi', '--replay', scriptFile, '--json'], {
        env: { PATH: process.env.PATH ?? '', TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      const events = out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as RunEvent);
      expect(events.length).toBeGreaterThan(5);
      expect(events[0]?.type).toBe('run.queued');
      expect(events.at(-1)).toMatchObject({ type: 'run.completed', data: { output: 'ok' } });
      expect(events.some((e) => e.type === 'tool.result')).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** Runs the built CLI with output to a pipe (no terminal: ASCII marks, no colour), to its exit. */
async function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, out, err };
}

describe('crew runs through the SDK and the CLI', () => {
  it("reads a parent's tree with client.tree, and shows its children in tether logs and tether show", async () => {
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const tasks = [{ goal: 'Write the parser' }, { goal: 'Write the tests' }];
    const submitted = await client.submit({
      input: 'Build the parser',
      toolsets: ['base', 'planning', 'crew'],
      model: {
        provider: 'replay',
        script: [{ toolCalls: [call('delegate_parallel', { tasks })] }, { content: 'Parser done.' }],
        children: [
          { match: 'parser', script: [{ content: 'Parser written.' }] },
          { script: [{ toolCalls: [call('escalate', { reason: 'No test runner here.' })] }] },
        ],
      },
    });
    const run = await client.wait(submitted.id, { intervalMs: 50 });
    expect(run).toMatchObject({ status: 'completed', output: 'Parser done.' });

    const tree = await client.tree(submitted.id);
    expect(tree.children.map((c) => [c.index, c.status, c.run?.parentRunId, c.run?.output])).toEqual([
      [0, 'completed', submitted.id, 'Parser written.'],
      [1, 'completed', submitted.id, 'No test runner here.'],
    ]);
    const [first, second] = tree.children.map((c) => c.id);

    const logs = await cli(['logs', submitted.id]);
    expect(logs.code).toBe(0);
    expect(logs.out).toContain(
      [
        `    -> child 0 started: Write the parser (${first})`,
        `    -> child 1 started: Write the tests (${second})`,
        '    waiting for 2 children',
      ].join('\n'),
    );
    expect(logs.out).toContain(`    -> child 0 completed: Parser written. (${first})`);
    expect(logs.out).toContain(`    -> child 1 escalated: No test runner here. (${second})`);

    const show = await cli(['show', submitted.id]);
    expect(show.code).toBe(0);
    expect(show.out).toContain(
      [
        `${submitted.id}  completed  Parser done.`,
        `|- [0] ${first}  completed  Parser written.`,
        `\`- [1] ${second}  escalated  No test runner here.`,
      ].join('\n'),
    );
  }, 60_000);
});

/** The events about messages sent to the run, as `[type, messageId, content?]`, in order. */
function messageEvents(events: readonly RunEvent[]): unknown[][] {
  return events.flatMap((e) =>
    e.type === 'message.received'
      ? [[e.type, e.data.messageId, e.data.content]]
      : e.type === 'message.delivered' || e.type === 'message.undelivered'
        ? [[e.type, e.data.messageId]]
        : [],
  );
}

/** A replay run that asks one question and, once answered, ends with `last`. */
async function submitQuestion(client: TetherClient, last: string): Promise<{ id: string; question: string }> {
  const { id } = await client.submit({
    input: 'Pick a colour for the banner',
    model: {
      provider: 'replay',
      script: [
        { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
        { content: last },
      ],
    },
    clarify: { timeoutMs: 60_000 },
  });
  const waiting = await client.wait(id, { until: 'input', intervalMs: 50 });
  const question = waiting.pendingClarify?.requestId;
  if (question === undefined) throw new Error(`run ${id} is ${waiting.status}, not waiting on its question`);
  return { id, question };
}

describe('steering a live run through the SDK and the CLI', () => {
  it('a run waiting on its question takes the messages, in order, at the turn after the answer', async () => {
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const { id, question } = await submitQuestion(client, 'Blue, kept short.');
    const { messageId } = await client.steer(id, 'Keep the answer short.');
    const steered = await cli(['steer', id, 'And', 'name', 'the', 'shade.']);
    expect(steered).toMatchObject({ code: 0, err: '' });
    const cliMessage = /^Sent (msg_\S+) to (\S+); the run takes it at its next turn boundary\.\n$/.exec(
      steered.out,
    );
    expect(cliMessage?.[2]).toBe(id);
    // A message does not wake a waiting run: it waits on its question still.
    expect((await client.get(id)).status).toBe('waiting_for_input');

    await client.answer(id, question, 'blue');
    expect(await client.wait(id, { intervalMs: 50 })).toMatchObject({
      status: 'completed',
      output: 'Blue, kept short.',
    });
    const events = await allEvents(client, id);
    expect(messageEvents(events)).toEqual([
      ['message.received', messageId, 'Keep the answer short.'],
      ['message.received', cliMessage?.[1], 'And name the shade.'],
      ['message.delivered', messageId],
      ['message.delivered', cliMessage?.[1]],
    ]);
    // Taken after the question's answer and result, before the model's next turn.
    const at = (found: (e: RunEvent) => boolean) => events.findIndex(found);
    const delivered = at((e) => e.type === 'message.delivered');
    expect(delivered).toBeGreaterThan(at((e) => e.type === 'tool.result' && e.data.name === 'clarify'));
    expect(delivered).toBeLessThan(at((e) => e.type === 'message' && e.data.content === 'Blue, kept short.'));

    const logs = await cli(['logs', id]);
    expect(logs.code).toBe(0);
    expect(logs.out).toContain(
      '  -> message for the run: "Keep the answer short."\n  -> message for the run: "And name the shade."\n',
    );
    expect(logs.out).toContain(
      '  + the run took your message "Keep the answer short."\n  + the run took your message "And name the shade."\n',
    );
    const late = await cli(['steer', id, 'Too', 'late?']);
    expect(late.code).toBe(1);
    expect(late.err).toContain('(ERR_RUN_ENDED, HTTP 409)');
  }, 60_000);

  it('a run cancelled before it takes a message says so before its end', async () => {
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const { id } = await submitQuestion(client, 'never');
    const { messageId } = await client.steer(id, 'Use the brand blue.');
    await client.cancel(id);
    expect(await client.wait(id, { intervalMs: 50 })).toMatchObject({ status: 'cancelled' });
    const events = await allEvents(client, id);
    expect(messageEvents(events)).toEqual([
      ['message.received', messageId, 'Use the brand blue.'],
      ['message.undelivered', messageId],
    ]);
    expect(events.at(-1)?.type).toBe('run.cancelled');
    const logs = await cli(['logs', id]);
    expect(logs.out).toContain('  x the run ended before taking your message "Use the brand blue."\n');
  }, 60_000);
});
