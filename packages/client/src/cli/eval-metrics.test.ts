import type { RunEvent, RunEventInput } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import {
  compareMetrics,
  type EvalMetrics,
  type EvalTask,
  figures,
  foldRun,
  normalisePath,
  promisesAction,
  summarise,
  type TaskOutcome,
} from './eval-metrics.js';

const FIXTURE = ['README.md', 'src/config.json', 'src/report.js'];

/** A run's log from its events, with ids and times as the log gives them. */
function log(runId: string, inputs: RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({ ...input, id: `1700000000000-${index}`, runId, at: '2026-11-30T19:00:00.000Z' }) as RunEvent,
  );
}

const call = (callId: string, name: string, args: unknown): RunEventInput => ({
  type: 'tool.call',
  data: { callId, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
});
const message = (content: string, toolCalls: string[] = []): RunEventInput => ({
  type: 'message',
  data: {
    role: 'assistant',
    content,
    toolCalls: toolCalls.map((name, i) => ({ id: `c${i}`, name, arguments: '{}' })),
  },
});
const completed: RunEventInput = { type: 'run.completed', data: { output: 'done' } };
const task = (id: string, kind: EvalTask['kind']): EvalTask => ({ id, kind, input: id });

describe('foldRun', () => {
  it('reads a well-behaved multi-step run: todo, patches on existing files, a new file, a plain final answer', () => {
    const events = log('run_good', [
      { type: 'run.queued', data: {} },
      { type: 'run.started', data: { attempt: 1, workerId: 'w' } },
      message('', ['todo']),
      call('a', 'todo', { todos: [] }),
      { type: 'todo.updated', data: { todos: [{ id: '1', content: 'x', status: 'pending' }] } },
      message('', ['patch', 'patch']),
      call('b', 'patch', { path: './src/config.json', old_string: 'a', new_string: 'b' }),
      call('c', 'patch', { path: 'README.md', old_string: 'a', new_string: 'b' }),
      message('', ['write_file']),
      call('d', 'write_file', { path: 'test/new.test.js', content: 'x' }),
      message('Done: the currency is USD, and the README says so.'),
      completed,
    ]);
    expect(foldRun(task('multi-a', 'multi'), events, FIXTURE)).toEqual({
      id: 'multi-a',
      kind: 'multi',
      runId: 'run_good',
      status: 'completed',
      turns: 4,
      toolCalls: 4,
      todo: true,
      clarify: false,
      promiseWithoutAction: false,
      patchEdits: 2,
      writeFileEdits: 0,
      compacted: 0,
      submitAttempts: 0,
      result: false,
    });
  });

  it('reads a badly behaved run: write_file over existing files (and over one it created), a promise, no tool call', () => {
    const events = log('run_bad', [
      message('', ['write_file', 'write_file']),
      call('a', 'write_file', { path: '/src/report.js', content: 'x' }),
      call('b', 'write_file', { path: 'out.txt', content: 'x' }),
      message('', ['write_file']),
      call('c', 'write_file', { path: 'out.txt', content: 'y' }),
      message("Let me check the report next, then I'll update the README."),
      completed,
    ]);
    expect(foldRun(task('edit-a', 'edit'), events, FIXTURE)).toMatchObject({
      status: 'completed',
      turns: 3,
      toolCalls: 3,
      todo: false,
      promiseWithoutAction: true,
      patchEdits: 0,
      writeFileEdits: 2,
    });
  });

  it('counts a clarify call or a clarify.requested event as asking, and a failed run with its error', () => {
    const asked = log('run_ask', [
      message('', ['clarify']),
      call('a', 'clarify', { question: 'Which threshold?', choices: ['5', '10'] }),
      {
        type: 'clarify.requested',
        data: { requestId: 'clr_1', question: 'Which?', choices: [], expiresAt: '2026-11-30T19:01:00.000Z' },
      },
      { type: 'clarify.answered', data: { requestId: 'clr_1', answer: 'judge' } },
      message('I will go with 10.'),
      { type: 'run.failed', data: { error: { code: 'ERR_AGENT_MAX_STEPS', message: 'too many' } } },
    ]);
    const outcome = foldRun(task('ambiguous-a', 'ambiguous'), asked, FIXTURE);
    expect(outcome).toMatchObject({
      clarify: true,
      status: 'failed',
      error: 'ERR_AGENT_MAX_STEPS: too many',
    });
    // A promise counts only in a completed run: a failed one did not choose to stop.
    expect(outcome.promiseWithoutAction).toBe(false);
    const requestedOnly = log('run_ask2', [
      {
        type: 'clarify.requested',
        data: { requestId: 'clr_2', question: 'Which?', choices: [], expiresAt: '2026-11-30T19:01:00.000Z' },
      },
      { type: 'run.cancelled', data: {} },
    ]);
    expect(foldRun(task('x', 'ambiguous'), requestedOnly, FIXTURE)).toMatchObject({
      clarify: true,
      status: 'cancelled',
    });
  });

  it('judges only the final turn: a promise in a turn that made a tool call is kept', () => {
    const events = log('run_kept', [
      message('Let me read the config.', ['read_file']),
      call('a', 'read_file', { path: 'src/config.json' }),
      message('The threshold is 5.'),
      completed,
    ]);
    expect(foldRun(task('single-a', 'single'), events, FIXTURE).promiseWithoutAction).toBe(false);
  });

  it('ignores calls whose arguments are malformed or name no path, and a run with no terminal event is an error', () => {
    const events = log('run_cut', [
      message('', ['patch', 'write_file']),
      call('a', 'patch', '{"path": "README.md"'),
      call('b', 'write_file', { content: 'x' }),
    ]);
    expect(foldRun(task('edit-b', 'edit'), events, FIXTURE)).toMatchObject({
      status: 'error',
      error: 'the run did not end',
      patchEdits: 0,
      writeFileEdits: 0,
      toolCalls: 2,
    });
    expect(foldRun(task('edit-c', 'edit'), [], FIXTURE)).toMatchObject({ runId: null, status: 'error' });
  });
});

const compacted = (strategy: 'prune' | 'summarise', beforeTokens: number): RunEventInput => ({
  type: 'context.compacted',
  data: {
    beforeTokens,
    afterTokens: Math.round(beforeTokens / 3),
    strategy,
    turnsSummarised: strategy === 'summarise' ? 12 : 0,
    prunedToolResults: 9,
    window: 200_000,
  },
});
const read = (callId: string, day: number): RunEventInput[] => [
  message('', ['read_file']),
  call(callId, 'read_file', { path: `logs/2026-03-${String(day).padStart(2, '0')}.log` }),
  { type: 'tool.result', data: { callId, name: 'read_file', ok: true, content: 'x'.repeat(100) } },
];

describe('foldRun: long and structured runs', () => {
  it('counts each compaction of a long run that completed', () => {
    const events = log('run_long', [
      message('', ['bash']),
      call('g', 'bash', { command: 'node src/logs.js' }),
      ...read('r1', 1),
      ...read('r2', 2),
      compacted('prune', 165_000),
      ...read('r3', 3),
      compacted('summarise', 170_000),
      ...read('r4', 4),
      message('2026-03-01: FTL-AAAAAA\n2026-03-02: FTL-BBBBBB'),
      completed,
    ]);
    expect(foldRun(task('long-a', 'long'), events, FIXTURE)).toMatchObject({
      status: 'completed',
      turns: 6,
      toolCalls: 5,
      compacted: 2,
      submitAttempts: 0,
      result: false,
      promiseWithoutAction: false,
    });
  });

  it('reads a long run that could not fit: compacted once, then failed ERR_CONTEXT_EXHAUSTED', () => {
    const events = log('run_full', [
      ...read('r1', 1),
      compacted('summarise', 190_000),
      ...read('r2', 2),
      {
        type: 'run.failed',
        data: { error: { code: 'ERR_CONTEXT_EXHAUSTED', message: 'the request is 230000 tokens' } },
      },
    ]);
    expect(foldRun(task('long-b', 'long'), events, FIXTURE)).toMatchObject({
      status: 'failed',
      error: 'ERR_CONTEXT_EXHAUSTED: the request is 230000 tokens',
      compacted: 1,
    });
  });

  it('reads a structured run: an invalid submit_result, a valid one, and the result in run.completed', () => {
    const result = { name: 'inventory', version: '1.3.0', items: [] };
    const events = log('run_struct', [
      message('', ['read_file']),
      call('a', 'read_file', { path: 'package.json' }),
      message('', ['submit_result']),
      call('b', 'submit_result', { name: 'inventory' }),
      {
        type: 'tool.result',
        data: { callId: 'b', name: 'submit_result', ok: false, content: 'must have required property' },
      },
      message('Here it is.', ['submit_result']),
      call('c', 'submit_result', result),
      { type: 'run.completed', data: { output: 'Here it is.', result } },
    ]);
    expect(foldRun(task('structured-a', 'structured'), events, FIXTURE)).toMatchObject({
      status: 'completed',
      turns: 3,
      toolCalls: 3,
      submitAttempts: 2,
      result: true,
      promiseWithoutAction: false,
    });
  });

  it('reads a structured run that never gave a valid result: failed ERR_OUTPUT_INVALID, no result', () => {
    const events = log('run_invalid', [
      message('', ['submit_result']),
      call('a', 'submit_result', '{"name": 1}'),
      message("I'll answer in text: inventory 1.3.0."),
      message('', ['submit_result']),
      call('b', 'submit_result', { version: '1.3.0' }),
      {
        type: 'run.failed',
        data: { error: { code: 'ERR_OUTPUT_INVALID', message: 'no valid result in 3 attempts' } },
      },
    ]);
    expect(foldRun(task('structured-b', 'structured'), events, FIXTURE)).toMatchObject({
      status: 'failed',
      error: 'ERR_OUTPUT_INVALID: no valid result in 3 attempts',
      submitAttempts: 2,
      result: false,
      promiseWithoutAction: false,
    });
    // A run with no output completes without a result.
    expect(foldRun(task('single-a', 'single'), log('run_plain', [completed]), FIXTURE).result).toBe(false);
  });
});

describe('promisesAction', () => {
  it.each([
    ['Let me update the file.', true],
    ["I'll run the report now.", true],
    ['I will add the tests next.', true],
    ["I'm going to edit config.json.", true],
    ['Next, I need to check the CSV.', true],
    ['我来修改配置文件。', true],
    ['接下来我会运行报告。', true],
    ['The threshold is 5.', false],
    ['Done. Let me know if you want anything else.', false],
    ['已完成。如有需要请告诉我。', false],
    ['I updated README.md and CHANGELOG.md.', false],
  ])('%s → %s', (text, expected) => {
    expect(promisesAction(text)).toBe(expected);
  });
});

describe('normalisePath', () => {
  it('drops ./ and / at the start, and doubles', () => {
    expect(normalisePath('./src//config.json')).toBe('src/config.json');
    expect(normalisePath('/README.md')).toBe('README.md');
    expect(normalisePath('src\\report.js')).toBe('src/report.js');
  });
});

const outcome = (kind: TaskOutcome['kind'], fields: Partial<TaskOutcome> = {}): TaskOutcome => ({
  id: `${kind}-${Math.random()}`,
  kind,
  runId: 'run',
  status: 'completed',
  turns: 1,
  toolCalls: 0,
  todo: false,
  clarify: false,
  promiseWithoutAction: false,
  patchEdits: 0,
  writeFileEdits: 0,
  compacted: 0,
  submitAttempts: 0,
  result: false,
  ...fields,
});

describe('summarise', () => {
  it('adds outcomes up per kind; tasks that never ran count in runs only', () => {
    const metrics = summarise([
      outcome('multi', { todo: true, patchEdits: 3 }),
      outcome('multi', { todo: true, writeFileEdits: 1, status: 'failed' }),
      outcome('multi'),
      outcome('single', { todo: true, promiseWithoutAction: true }),
      outcome('single'),
      outcome('edit', { patchEdits: 1, clarify: true }),
      outcome('edit', { writeFileEdits: 1 }),
      outcome('ambiguous', { clarify: true }),
      outcome('ambiguous', { status: 'cancelled' }),
      outcome('ambiguous', { status: 'error', clarify: true, todo: true }),
    ]);
    expect(metrics).toEqual({
      runs: { total: 10, completed: 7, failed: 1, cancelled: 1, error: 1 },
      todo: {
        multi: { count: 2, total: 3, rate: 2 / 3 },
        single: { count: 1, total: 4, rate: 1 / 4 },
      },
      clarify: {
        ambiguous: { count: 1, total: 2, rate: 1 / 2 },
        clear: { count: 1, total: 7, rate: 1 / 7 },
      },
      patchShare: { count: 4, total: 6, rate: 4 / 6 },
      promiseWithoutAction: { count: 1, total: 7, rate: 1 / 7 },
      long: {
        completed: { count: 0, total: 0, rate: null },
        compacted: { count: 0, total: 0, rate: null },
      },
      structured: { valid: { count: 0, total: 0, rate: null } },
    });
  });

  it('adds up long and structured runs, which count in no todo or clarify figure', () => {
    const metrics = summarise([
      outcome('long', { compacted: 3 }),
      outcome('long', { compacted: 1, status: 'failed', error: 'ERR_CONTEXT_EXHAUSTED: too long' }),
      outcome('long', { status: 'failed', error: 'ERR_AGENT_MAX_STEPS: too many' }),
      outcome('long', { status: 'error', compacted: 2 }),
      outcome('structured', { result: true, submitAttempts: 1, todo: true }),
      outcome('structured', { result: true, submitAttempts: 2, clarify: true }),
      outcome('structured', { status: 'failed', submitAttempts: 3 }),
      // Completed with no result: the run was not given output (a task set's mistake).
      outcome('structured'),
      outcome('single'),
    ]);
    expect(metrics.runs).toEqual({ total: 9, completed: 5, failed: 3, cancelled: 0, error: 1 });
    expect(metrics.long).toEqual({
      completed: { count: 1, total: 3, rate: 1 / 3 },
      compacted: { count: 2, total: 3, rate: 2 / 3 },
    });
    expect(metrics.structured.valid).toEqual({ count: 2, total: 4, rate: 2 / 4 });
    expect(metrics.todo.single).toEqual({ count: 0, total: 1, rate: 0 });
    expect(metrics.clarify.clear).toEqual({ count: 0, total: 1, rate: 0 });
    // A structured run ends with a call, never a plain turn: left out of promises; a long one counts.
    expect(metrics.promiseWithoutAction).toEqual({ count: 0, total: 2, rate: 0 });
  });

  it('gives a null rate where there is nothing to divide', () => {
    const metrics = summarise([outcome('single')]);
    expect(metrics.todo.multi).toEqual({ count: 0, total: 0, rate: null });
    expect(metrics.patchShare.rate).toBeNull();
  });
});

describe('compareMetrics', () => {
  it('gives each figure the previous rate, the difference, and whether it went the way the design wants', () => {
    const before = summarise([outcome('multi'), outcome('single', { todo: true }), outcome('ambiguous')]);
    const after = summarise([
      outcome('multi', { todo: true }),
      outcome('single', { todo: true }),
      outcome('ambiguous'),
    ]);
    const rows = compareMetrics(after, before);
    expect(rows.map((row) => row.key)).toEqual(figures(after).map((figure) => figure.key));
    expect(rows.find((row) => row.key === 'todo.multi')).toMatchObject({ delta: 1, better: true });
    expect(rows.find((row) => row.key === 'todo.single')).toMatchObject({ delta: 0, better: null });
    expect(rows.find((row) => row.key === 'patchShare')).toMatchObject({ delta: null, better: null });
    const worse = compareMetrics(before, after).find((row) => row.key === 'todo.multi');
    expect(worse).toMatchObject({ delta: -1, better: false, previous: { count: 1, total: 1, rate: 1 } });
    const asked = summarise([outcome('single', { clarify: true })]);
    const clear = compareMetrics(asked, summarise([outcome('single')])).find(
      (r) => r.key === 'clarify.clear',
    );
    expect(clear).toMatchObject({ delta: 1, better: false });
  });

  it('lists the new figures last, in table order, and compares them', () => {
    const before = summarise([outcome('long'), outcome('structured')]);
    const after = summarise([outcome('long', { compacted: 2 }), outcome('structured', { result: true })]);
    expect(figures(after).map((f) => [f.key, f.goal, f.value.rate])).toEqual([
      ['todo.multi', 'high', null],
      ['todo.single', 'low', null],
      ['clarify.ambiguous', 'high', null],
      ['clarify.clear', 'low', null],
      ['patchShare', 'high', null],
      ['promiseWithoutAction', 'low', 0],
      ['long.completed', 'high', 1],
      ['long.compacted', 'high', 1],
      ['structured.valid', 'high', 1],
    ]);
    const rows = compareMetrics(after, before);
    expect(rows.slice(-3).map((row) => [row.key, row.delta, row.better])).toEqual([
      ['long.completed', 0, null],
      ['long.compacted', 1, true],
      ['structured.valid', 1, true],
    ]);
  });

  it('compares with an older result that has no long or structured figures: those compare as null', () => {
    const current = summarise([outcome('multi', { todo: true }), outcome('long', { compacted: 1 })]);
    const { long: _long, structured: _structured, ...old } = summarise([outcome('multi')]);
    const rows = compareMetrics(current, old as Partial<EvalMetrics>);
    expect(rows.map((row) => row.key)).toEqual(figures(current).map((figure) => figure.key));
    expect(rows.find((row) => row.key === 'todo.multi')).toMatchObject({ delta: 1, better: true });
    for (const key of ['long.completed', 'long.compacted', 'structured.valid']) {
      expect(rows.find((row) => row.key === key)).toMatchObject({
        previous: null,
        delta: null,
        better: null,
      });
    }
  });
});
