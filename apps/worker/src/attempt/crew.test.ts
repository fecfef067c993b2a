import { describe, expect, it } from 'vitest';
import { childToolsets, delegationKey, planChildren, refuseTasks, withCrewTools } from './crew.js';

const config = { crewMaxDepth: 1, crewChildTimeoutMs: 60_000 } as Parameters<
  typeof planChildren
>[0]['config'];

describe('the crew on the worker', () => {
  it("gives a child the toolsets it asked for within its parent's, never interaction, crew only below the max depth", () => {
    const parent = { input: 'x', toolsets: ['base', 'planning', 'interaction', 'crew'] };
    expect(childToolsets(parent, { goal: 'g' }, 1, 1)).toEqual(['base', 'planning']);
    expect(childToolsets(parent, { goal: 'g' }, 1, 2)).toEqual(['base', 'planning', 'crew']);
    expect(
      childToolsets(parent, { goal: 'g', toolsets: ['planning', 'memory', 'interaction'] }, 1, 2),
    ).toEqual(['planning']);
    // A parent with the default toolsets (it could not delegate without crew, but the rule holds).
    expect(childToolsets({ input: 'x' }, { goal: 'g' }, 1, 1)).toEqual(['base', 'planning']);
  });

  it('offers delegation only below the max depth, and escalate only to children', () => {
    const names = ['bash', 'delegate_task', 'delegate_parallel', 'escalate'];
    expect(withCrewTools(names, { input: 'x' }, 1)).toEqual(['bash', 'delegate_task', 'delegate_parallel']);
    const child = {
      input: 'x',
      crew: { goal: 'g', parentRunId: 'p', rootRunId: 'p', depth: 1, workspace: { id: 'p' } },
    };
    expect(withCrewTools(names, child, 1)).toEqual(['bash', 'escalate']);
    expect(withCrewTools(names, child, 2)).toEqual([
      'bash',
      'delegate_task',
      'delegate_parallel',
      'escalate',
    ]);
    expect(withCrewTools(['bash'], child, 1)).toEqual(['bash', 'escalate']);
  });

  it("plans children from the checkpoint's ids, in the root's workspace, with the parent's model, locale, limits and approval policy", () => {
    const spec = {
      input: 'lead',
      locale: 'zh' as const,
      limits: { maxSteps: 7 },
      approval: { tools: ['write_file'], bash: { ask: ['.*'] } },
      toolsets: ['base', 'crew'],
      model: {
        provider: 'replay' as const,
        script: [{ content: 'x' }],
        children: [{ match: 'parse', script: [{ content: 'parsed' }] }, { script: [{ content: 'other' }] }],
      },
    };
    const children = planChildren(
      { runId: 'run_parent', config },
      { tenant: 't', spec, sessionId: 'ses_1' },
      {
        callId: 'call_1',
        name: 'delegate_parallel',
        tasks: [
          { goal: 'parse it', context: 'ctx', childRunId: 'run_c0' },
          { goal: 'other', childRunId: 'run_c1' },
        ],
      },
      (id) => `{q}:${id}`,
      1_000,
    );
    expect(children.map((c) => c.id)).toEqual(['run_c0', 'run_c1']);
    expect(children[0]).toMatchObject({
      tenant: 't',
      queue: '{q}:run_c0',
      crew: {
        parentRunId: 'run_parent',
        rootRunId: 'run_parent',
        depth: 1,
        call: 'call_1 run_c0',
        index: 0,
        deadlineMs: 61_000,
      },
      spec: {
        input: 'parse it',
        locale: 'zh',
        limits: { maxSteps: 7 },
        approval: { tools: ['write_file'], bash: { ask: ['.*'] } },
        toolsets: ['base'],
        model: { provider: 'replay', script: [{ content: 'parsed' }] },
        crew: { goal: 'parse it', context: 'ctx', workspace: { id: 'run_parent', sessionId: 'ses_1' } },
      },
    });
    expect(children[1]?.spec.model).toEqual({ provider: 'replay', script: [{ content: 'other' }] });
  });

  it('refuses a replay delegation with no script for a goal, naming the task', () => {
    const spec = {
      input: 'x',
      model: {
        provider: 'replay' as const,
        script: [{ content: 'x' }],
        children: [{ match: 'a', script: [{ content: 'y' }] }],
      },
    };
    expect(refuseTasks(spec, [{ goal: 'a' }])).toBeUndefined();
    expect(refuseTasks(spec, [{ goal: 'a' }, { goal: 'b' }])).toMatch(/^Task 1 cannot be delegated/);
  });

  it('keys a delegation by its call id and its first child, so a call id used again in a later turn is another delegation', () => {
    const task = (childRunId: string) => ({ childRunId, goal: 'g' });
    const first = delegationKey({ callId: 'call_0', tasks: [task('run_a_x'), task('run_b_x')] });
    const again = delegationKey({ callId: 'call_0', tasks: [task('run_c_x')] });
    expect(first).not.toBe(again);
    expect(delegationKey({ callId: 'call_0', tasks: [task('run_a_x')] })).toBe(first);
  });
});
