/**
 * `tether eval` end to end: the CLI (in process) against a real API process and
 * a worker process whose default model is a fake OpenAI-compatible server
 * speaking the real wire protocol. The fake plays a scripted model per task
 * (found by the task's input in the request), well behaved or badly, and the
 * figures are checked exactly, then compared with each other.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type FakeBehavior,
  FakeOpenAIServer,
  killAllSpawned,
  streamText,
  streamToolCalls,
} from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvalResult } from '../src/cli/eval-command.js';
import { EVAL_CLARIFY_ANSWER } from '../src/cli/eval-command.js';
import { loadTaskSet } from '../src/cli/eval-tasks.js';
import type { CliIo } from '../src/cli/io.js';
import { runCli } from '../src/cli/program.js';
import { TetherClient } from '../src/index.js';
import { KeyboardInput, RecordingOutput } from '../src/testing/terminal.js';
import { API_KEY, type Stack, startStack } from './stack.js';

const TASKS = ['single-threshold', 'multi-currency', 'ambiguous-threshold', 'edit-warehouse'];

/** A model's turns for one task: the behaviour of turn `n` (0 first). */
type Script = Record<string, (turn: number) => FakeBehavior>;

const tool = (name: string, args: Record<string, unknown>, id = `call_${name}`) => ({
  id,
  name,
  arguments: JSON.stringify(args),
});
const patch = (path: string, from: string, to: string, id?: string) =>
  tool('patch', { path, old_string: from, new_string: to }, id);
const CONFIG = '{\n  "currency": "USD",\n  "lowStockThreshold": 10,\n  "warehouse": "south"\n}\n';

/** Follows the eval's tool-use rules: todo for the multi-step task only, clarify for the ambiguous one, patch. */
const WELL: Script = {
  'single-threshold': (turn) =>
    [streamToolCalls([tool('read_file', { path: 'src/config.json' })]), streamText('The threshold is 5.')][
      turn
    ] ?? streamText('-'),
  'multi-currency': (turn) =>
    [
      streamToolCalls([
        tool('todo', {
          todos: [
            { id: '1', content: 'config', status: 'in_progress' },
            { id: '2', content: 'README and CHANGELOG', status: 'pending' },
          ],
        }),
      ]),
      streamToolCalls([
        patch('src/config.json', '"EUR"', '"USD"', 'call_p1'),
        patch('./README.md', 'Prices are in EUR.', 'Prices are in USD.', 'call_p2'),
      ]),
      streamToolCalls([patch('CHANGELOG.md', '## Unreleased\n', '## Unreleased\n\n- Prices in USD.\n')]),
      streamText('Prices are now in USD: config, README and changelog updated.'),
    ][turn] ?? streamText('-'),
  'ambiguous-threshold': (turn) =>
    [
      streamToolCalls([tool('clarify', { question: 'Which threshold, and to what?', choices: ['10', '3'] })]),
      streamToolCalls([patch('src/config.json', '"lowStockThreshold": 5', '"lowStockThreshold": 10')]),
      streamText('The low-stock threshold is now 10.'),
    ][turn] ?? streamText('-'),
  'edit-warehouse': (turn) =>
    [
      streamToolCalls([patch('src/config.json', '"north"', '"south"')]),
      streamText('The warehouse is south now.'),
    ][turn] ?? streamText('-'),
};

/** Breaks each rule: todo on a one-step question, write_file over existing files, guessing, asking the obvious, promising. */
const BADLY: Script = {
  'single-threshold': (turn) =>
    [
      streamToolCalls([tool('todo', { todos: [{ id: '1', content: 'read', status: 'in_progress' }] })]),
      streamToolCalls([tool('read_file', { path: 'src/config.json' })]),
      streamText('The threshold is 5.'),
    ][turn] ?? streamText('-'),
  'multi-currency': (turn) =>
    [
      streamToolCalls([tool('write_file', { path: 'src/config.json', content: CONFIG })]),
      streamText("Let me update README.md and CHANGELOG.md next, then I'll check the report."),
    ][turn] ?? streamText('-'),
  'ambiguous-threshold': (turn) =>
    [
      streamToolCalls([tool('write_file', { path: '/src/config.json', content: CONFIG })]),
      streamText('I set the threshold to 10.'),
    ][turn] ?? streamText('-'),
  'edit-warehouse': (turn) =>
    [
      streamToolCalls([tool('clarify', { question: 'Should I really change it?' })]),
      streamToolCalls([tool('write_file', { path: 'src/config.json', content: CONFIG })]),
      streamText('I will run the report to make sure.'),
    ][turn] ?? streamText('-'),
};

/**
 * A fake model that plays `script` for whichever task a request belongs to
 * (its first user message holds the task's input), so runs can go at the same
 * time: the turn is the number of assistant messages the request carries.
 */
class ScriptedModel extends FakeOpenAIServer {
  script: Script = {};
  readonly inputs = new Map<string, string>();
  /** Each request's task and turn, in arrival order. */
  readonly seen: string[] = [];

  protected override next(): FakeBehavior | undefined {
    const body = this.requests.at(-1)?.body as { messages?: Array<{ role: string; content: unknown }> };
    const messages = body.messages ?? [];
    const user = JSON.stringify(messages.find((message) => message.role === 'user')?.content ?? '');
    const task = [...this.inputs].find(([, input]) => user.includes(JSON.stringify(input).slice(1, -1)))?.[0];
    const turn = messages.filter((message) => message.role === 'assistant').length;
    this.seen.push(`${task}#${turn}`);
    const play = task === undefined ? undefined : this.script[task];
    return play ? play(turn) : { kind: 'status', status: 400, body: { error: { message: 'unknown task' } } };
  }
}

let stack: Stack;
let model: ScriptedModel;
let tmp: string;

beforeAll(async () => {
  model = await new ScriptedModel().start();
  const { tasks } = await loadTaskSet();
  for (const task of tasks) model.inputs.set(task.id, task.input);
  tmp = await mkdtemp(join(tmpdir(), 'tether-eval-int-'));
  stack = await startStack('eval', { OPENAI_API_KEY: 'sk-eval', OPENAI_BASE_URL: model.baseURL });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await model?.close();
  await killAllSpawned();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

async function tether(args: string[], apiKey = API_KEY, signal?: AbortSignal) {
  const stdout = new RecordingOutput(false);
  const stderr = new RecordingOutput(false);
  const io: CliIo = {
    stdout,
    stderr,
    stdin: new KeyboardInput(false),
    env: { TETHER_URL: stack.baseUrl, TETHER_API_KEY: apiKey, NO_COLOR: '1' },
    ...(signal ? { signal } : {}),
  };
  const code = await runCli(args, io);
  return { code, stdout: stdout.plain, stderr: stderr.plain };
}

const ratio = (count: number, total: number) => ({ count, total, rate: total === 0 ? null : count / total });

describe('tether eval through a real stack', () => {
  it('measures a well-behaved model and a badly behaved one exactly, and compares the two', async () => {
    model.script = WELL;
    const saved = join(tmp, 'well.json');
    const well = await tether(['eval', '--tasks', TASKS.join(','), '--concurrency', '2', '--out', saved]);
    expect(well.stderr).toBe('');
    expect(well.code).toBe(0);
    const wellResult = JSON.parse(await readFile(saved, 'utf8')) as EvalResult;
    expect(wellResult.tasks.map((t) => [t.id, t.status])).toEqual(TASKS.map((id) => [id, 'completed']));
    expect(wellResult.metrics).toEqual({
      runs: { total: 4, completed: 4, failed: 0, cancelled: 0, error: 0 },
      todo: { multi: ratio(1, 1), single: ratio(0, 2) },
      clarify: { ambiguous: ratio(1, 1), clear: ratio(0, 3) },
      patchShare: ratio(5, 5),
      promiseWithoutAction: ratio(0, 4),
      long: { completed: ratio(0, 0), compacted: ratio(0, 0) },
      structured: { valid: ratio(0, 0) },
    });
    expect(wellResult.tasks.find((t) => t.id === 'multi-currency')).toMatchObject({
      turns: 4,
      toolCalls: 4,
      todo: true,
      patchEdits: 3,
      writeFileEdits: 0,
    });
    // The clarify question was answered with the fixed answer, which the model then saw.
    const resumed = model.requests.find((request) =>
      JSON.stringify(request.body).includes(JSON.stringify(EVAL_CLARIFY_ANSWER)),
    );
    expect(resumed).toBeDefined();
    expect(well.stdout).toMatch(/todo on multi-step tasks\s+100%\s+1\/1\s+high/);
    expect(well.stdout).toMatch(/patch, of edits of existing files\s+100%\s+5\/5\s+high/);
    expect(well.stdout).toContain(`Saved to ${saved}.`);

    model.script = BADLY;
    const bad = await tether(['eval', '--tasks', TASKS.join(','), '--json', '--compare', saved]);
    expect(bad.code).toBe(0);
    const badResult = JSON.parse(bad.stdout) as EvalResult;
    expect(badResult.metrics).toEqual({
      runs: { total: 4, completed: 4, failed: 0, cancelled: 0, error: 0 },
      todo: { multi: ratio(0, 1), single: ratio(1, 2) },
      clarify: { ambiguous: ratio(0, 1), clear: ratio(1, 3) },
      patchShare: ratio(0, 3),
      promiseWithoutAction: ratio(2, 4),
      long: { completed: ratio(0, 0), compacted: ratio(0, 0) },
      structured: { valid: ratio(0, 0) },
    });
    expect(badResult.tasks.filter((t) => t.promiseWithoutAction).map((t) => t.id)).toEqual([
      'multi-currency',
      'edit-warehouse',
    ]);
    expect(badResult.comparison?.map((row) => [row.key, row.delta, row.better])).toEqual([
      ['todo.multi', -1, false],
      ['todo.single', 0.5, false],
      ['clarify.ambiguous', -1, false],
      ['clarify.clear', 1 / 3, false],
      ['patchShare', -1, false],
      ['promiseWithoutAction', 0.5, false],
      ['long.completed', null, null],
      ['long.compacted', null, null],
      ['structured.valid', null, null],
    ]);
    // Every run was the caller's, tagged with its task.
    const runs = await fetch(`${stack.baseUrl}/v1/runs?limit=100`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    const listed = ((await runs.json()) as { data: Array<{ metadata?: { evalTask?: string } }> }).data;
    expect(listed.filter((run) => run.metadata?.evalTask !== undefined)).toHaveLength(8);
  }, 120_000);

  it('prints the comparison as a table: before, and the change in points', async () => {
    model.script = WELL;
    const before = join(tmp, 'before.json');
    expect((await tether(['eval', '--tasks', 'edit-warehouse', '--json', '--out', before])).code).toBe(0);
    model.script = BADLY;
    const after = await tether(['eval', '--tasks', 'edit-warehouse,single-threshold', '--compare', before]);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/clarify on clear tasks\s+50%\s+1\/2\s+low\s+0%\s+\+50 pp/);
    expect(after.stdout).toMatch(/patch, of edits of existing files\s+0%\s+0\/1\s+high\s+100%\s+-100 pp/);
    expect(after.stdout).toContain('(over a different set of tasks)');
  }, 60_000);

  it('gives a structured task its output: a valid submit_result is a result, invalid ones fail the run', async () => {
    const inventory = {
      name: 'inventory',
      version: '1.3.0',
      items: [{ sku: 'A-100', name: 'Anchor', quantity: 12, price: 24.5 }],
    };
    model.script = {
      'structured-inventory': (turn) =>
        [
          streamToolCalls([
            tool('read_file', { path: 'package.json' }, 'call_r1'),
            tool('read_file', { path: 'data/items.csv' }, 'call_r2'),
          ]),
          streamToolCalls([tool('submit_result', inventory)]),
        ][turn] ?? streamText('-'),
      'structured-low-stock': (turn) =>
        [
          streamToolCalls([
            tool('submit_result', { threshold: 5, currency: 'EUR', lowStock: ['C-300', 'D-400'] }),
          ]),
        ][turn] ?? streamText('-'),
    };
    const saved = join(tmp, 'structured.json');
    const good = await tether(['eval', '--tasks', 'structured', '--json', '--out', saved]);
    expect(good.stderr).toBe('');
    expect(good.code).toBe(0);
    const goodResult = JSON.parse(good.stdout) as EvalResult;
    expect(goodResult.tasks.map((t) => [t.id, t.status])).toEqual([
      ['structured-inventory', 'completed'],
      ['structured-low-stock', 'completed'],
    ]);
    expect(goodResult.metrics.structured.valid).toEqual(ratio(2, 2));
    const done = goodResult.tasks.find((t) => t.id === 'structured-inventory');
    expect(done).toMatchObject({ status: 'completed', result: true, submitAttempts: 1, compacted: 0 });
    // The model was offered submit_result with each task's schema, and the run kept the result.
    const offered = model.requests
      .map(
        (request) => request.body as { tools?: Array<{ function: { name: string; parameters: unknown } }> },
      )
      .flatMap((body) => body.tools ?? [])
      .filter((t) => t.function.name === 'submit_result')
      .map((t) => (t.function.parameters as { required: string[] }).required.join(','));
    expect(new Set(offered)).toEqual(new Set(['name,version,items', 'threshold,currency,lowStock']));
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    expect((await client.get(done?.runId as string)).result).toEqual(inventory);

    // Invalid twice, then a plain-text answer: the third failed attempt fails the run.
    model.script = {
      'structured-inventory': (turn) =>
        [
          streamToolCalls([tool('submit_result', { name: 'inventory' })]),
          streamToolCalls([tool('submit_result', { ...inventory, version: 13 })]),
          streamText('The project is inventory 1.3.0.'),
        ][turn] ?? streamText('-'),
    };
    const bad = await tether(['eval', '--tasks', 'structured-inventory', '--json', '--compare', saved]);
    expect(bad.code).toBe(0);
    const badResult = JSON.parse(bad.stdout) as EvalResult;
    expect(badResult.tasks).toHaveLength(1);
    expect(badResult.tasks[0]).toMatchObject({ status: 'failed', result: false, submitAttempts: 2 });
    expect(badResult.tasks[0]?.error).toMatch(/^ERR_OUTPUT_INVALID: /);
    expect(badResult.metrics.structured.valid).toEqual(ratio(0, 1));
    expect(badResult.comparison?.find((row) => row.key === 'structured.valid')).toMatchObject({
      delta: -1,
      better: false,
    });
  }, 60_000);

  it('runs a task set of its own (--task-set), with its own fixture', async () => {
    const dir = join(tmp, 'own');
    await mkdir(join(dir, 'work'), { recursive: true });
    await writeFile(join(dir, 'work', 'notes.md'), '# Notes\nold line\n');
    const input = 'In notes.md, replace the old line with a new one.';
    await writeFile(
      join(dir, 'set.json'),
      JSON.stringify({ version: 1, fixture: 'work', tasks: [{ id: 'own-edit', kind: 'edit', input }] }),
    );
    model.inputs.set('own-edit', input);
    model.script = {
      'own-edit': (turn) =>
        [streamToolCalls([patch('notes.md', 'old line', 'new line')]), streamText('Replaced.')][turn] ??
        streamText('-'),
    };
    const own = await tether(['eval', '--task-set', join(dir, 'set.json'), '--json']);
    expect(own.code).toBe(0);
    const result = JSON.parse(own.stdout) as EvalResult;
    expect(result.tasks.map((t) => [t.id, t.status, t.patchEdits])).toEqual([['own-edit', 'completed', 1]]);
    expect(result.metrics.patchShare).toEqual(ratio(1, 1));
  }, 60_000);

  it('refuses bad options before submitting anything, and says a wrong key is refused', async () => {
    const asked = model.requests.length;
    const cases: Array<[string[], RegExp]> = [
      [['eval', '--concurrency', '0'], /--concurrency must be an integer from 1 to 16 \(got "0"\)/],
      [['eval', '--max-steps', 'x'], /--max-steps must be an integer from 1 to 100/],
      [['eval', '--tasks', 'nope'], /--tasks nope: no task has that id or kind/],
      [['eval', '--compare', join(tmp, 'missing.json')], /--compare .*missing\.json: cannot read the file/],
      [['eval', '--locale', 'fr'], /--locale must be zh or en/],
      [['eval', '--task-set', join(tmp, 'none.json')], /task set .*none\.json: cannot read the file/],
    ];
    for (const [args, message] of cases) {
      const result = await tether(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    const unknown = await tether(['eval', '--tasks', 'single-version', '--model', 'no-such-profile']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no-such-profile/);
    const unauthorised = await tether(['eval', '--tasks', 'single-version'], 'sk_wrong');
    expect(unauthorised.code).toBe(1);
    expect(unauthorised.stderr).toMatch(/HTTP 401/);
    expect(model.requests.length).toBe(asked);
    // The API is still healthy.
    expect((await fetch(`${stack.baseUrl}/readyz`)).status).toBe(200);
  }, 60_000);

  it('cancels the runs still going when stopped (Ctrl-C), and exits 130', async () => {
    const hang: FakeBehavior = { kind: 'hang' };
    model.script = { 'single-version': () => hang, 'single-list-src': () => hang };
    const client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
    const asked = model.requests.length;
    const stop = new AbortController();
    const running = tether(['eval', '--tasks', 'single-version,single-list-src'], API_KEY, stop.signal);
    await model.waitForRequests(asked + 2);
    stop.abort(new Error('interrupted'));
    const stopped = await running;
    expect(stopped.code).toBe(130);
    const { data } = await client.list({ limit: 100 });
    const hung = data.filter((run) =>
      ['single-version', 'single-list-src'].includes(String(run.metadata?.evalTask)),
    );
    expect(hung).toHaveLength(2);
    const ended = await Promise.all(hung.map((run) => client.wait(run.id, { intervalMs: 50 })));
    expect(ended.map((run) => run.status)).toEqual(['cancelled', 'cancelled']);
  }, 60_000);
});
