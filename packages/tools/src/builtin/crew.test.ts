import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../execute-tool.js';
import { getSchema } from '../index.js';
import { callContext, createFixture, type Fixture, invoke } from '../testing/fixtures.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

const task = { goal: 'Write the tests of src/a.ts', context: 'Use vitest.', toolsets: ['base', 'planning'] };

describe('delegate_task and delegate_parallel', () => {
  it('in a host that cannot delegate, fail with a message saying the worker runtime does it', async () => {
    const single = await invoke(fx.tool('delegate_task'), task);
    expect(single.ok).toBe(false);
    expect(single.content).toContain('delegate_task cannot run here');
    expect(single.content).toContain('worker runtime');
    const parallel = await invoke(fx.tool('delegate_parallel'), { tasks: [task, { goal: 'b' }] });
    expect(parallel.ok).toBe(false);
    expect(parallel.content).toContain('delegate_parallel cannot run here');
  });

  it.each([
    { args: {}, problem: 'missing required field `goal`' },
    { args: { goal: '' }, problem: '`goal`' },
    { args: { goal: 'x'.repeat(20_001) }, problem: '`goal`' },
    { args: { goal: 'x', context: 'y'.repeat(100_001) }, problem: '`context`' },
    { args: { goal: 'x', toolsets: ['Base'] }, problem: '`toolsets[0]`' },
    { args: { goal: 'x', toolsets: ['a'.repeat(33)] }, problem: '`toolsets[0]`' },
    { args: { goal: 'x', toolsets: ['base', 'base'] }, problem: '`toolsets`' },
    {
      args: { goal: 'x', toolsets: Array.from({ length: 17 }, (_, i) => `t${'x'.repeat(i)}`) },
      problem: '`toolsets`',
    },
    { args: { goal: 'x', files: ['a'] }, problem: 'unknown field `files`' },
  ])('delegate_task refuses $problem', async ({ args, problem }) => {
    const result = await invoke(fx.tool('delegate_task'), args);
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    expect(result.content).toContain(problem);
  });

  it('delegate_parallel needs at least one task, each a closed task object, and sets no upper bound', async () => {
    const tool = fx.tool('delegate_parallel');
    const none = await invoke(tool, { tasks: [] });
    expect(none).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    expect(none.content).toContain('`tasks`');
    const bad = await invoke(tool, { tasks: [{ goal: 'a' }, { goal: 'b', extra: 1 }] });
    expect(bad.content).toContain('unknown field `tasks[1].extra`');
    // The runtime, not the schema, refuses a list longer than a delegation holds.
    expect(getSchema('delegate_parallel')?.parameters.properties.tasks.maxItems).toBeUndefined();
    const many = await invoke(tool, { tasks: Array.from({ length: 100 }, (_, i) => ({ goal: `g${i}` })) });
    expect(many.code).toBeUndefined();
  });
});

describe('escalate', () => {
  it('returns the reason', async () => {
    expect(await invoke(fx.tool('escalate'), { reason: 'The spec contradicts itself.' })).toEqual({
      ok: true,
      content: 'The spec contradicts itself.',
    });
  });

  it('refuses an empty reason and unknown fields', async () => {
    const tool = fx.tool('escalate');
    expect(await executeTool(tool, '{"reason":""}', callContext())).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
    });
    const extra = await executeTool(tool, '{"reason":"x","to":"user"}', callContext());
    expect(extra.content).toContain('unknown field `to`');
  });
});
