import type { ModelSpec, ReplayScript } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { checkModelSpec, childModelSpec } from './model-spec.js';

const script = (text: string): ReplayScript => [{ content: text }];

describe('childModelSpec', () => {
  it('inherits a profile spec, or none, as it is', () => {
    expect(childModelSpec({ profile: 'fast' }, 'any goal')).toEqual({ profile: 'fast' });
    expect(childModelSpec({}, 'any goal')).toEqual({});
    expect(childModelSpec(undefined, 'any goal')).toBeUndefined();
  });

  it('gives a replay child the first entry whose match is part of its goal, with its own children', () => {
    const grandchildren = [{ script: script('grandchild') }];
    const parent: ModelSpec = {
      provider: 'replay',
      script: script('parent'),
      children: [
        { match: 'docs/a.md', script: script('a') },
        { match: 'docs/', script: script('any doc'), children: grandchildren },
        { script: script('anything else') },
        { match: 'never reached', script: script('x') },
      ],
    };
    expect(childModelSpec(parent, 'Write docs/a.md from the API')).toEqual({
      provider: 'replay',
      script: script('a'),
    });
    expect(childModelSpec(parent, 'Write docs/b.md')).toEqual({
      provider: 'replay',
      script: script('any doc'),
      children: grandchildren,
    });
    expect(childModelSpec(parent, 'never reached: an entry without match comes first')).toEqual({
      provider: 'replay',
      script: script('anything else'),
    });
  });

  it('refuses a goal no entry matches, and a replay spec without children, naming the goal', () => {
    const matchOnly: ModelSpec = {
      provider: 'replay',
      script: script('p'),
      children: [{ match: 'tests', script: script('t') }],
    };
    for (const spec of [matchOnly, { provider: 'replay' as const, script: script('p') }]) {
      let error: unknown;
      try {
        childModelSpec(spec, 'Write the changelog');
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(AgentError);
      expect(error).toMatchObject({ code: 'ERR_MODEL_REPLAY_NO_CHILD_SCRIPT', retryable: false });
      expect((error as Error).message).toContain('"Write the changelog"');
    }
    expect(() => childModelSpec(matchOnly, `${'long goal '.repeat(100)}`)).toThrow(
      /"(long goal ){20}\.\.\."/,
    );
  });
});

describe('checkModelSpec with children', () => {
  const options = { profiles: [], allowReplay: true };

  it('accepts a replay spec with children scripts, nested', () => {
    const children = [
      { match: 'docs', script: script('d'), children: [{ script: script('g') }] },
      { script: script('rest') },
    ];
    expect(checkModelSpec({ provider: 'replay', script: script('p'), children }, options)).toEqual({
      kind: 'replay',
      script: script('p'),
      children,
    });
  });

  it.each([
    { children: [], problem: /^Invalid replay script: children: it has 0 entries/ },
    { children: [{ script: script('a'), extra: 1 }], problem: /children\[0\]: unexpected field\(s\) extra/ },
    { children: [{ match: '', script: script('a') }], problem: /children\[0\]: match must be a string/ },
    {
      children: [{ script: script('a') }, { script: [{ content: 'x' }, { toolCalls: 'bash' }] }],
      problem: /children\[1\]\.script: turn 1/,
    },
    {
      children: [{ script: script('a'), children: [{ script: [] }] }],
      problem: /children\[0\]\.children\[0\]\.script: it has no turns/,
    },
  ])('refuses $problem', ({ children, problem }) => {
    let error: unknown;
    try {
      checkModelSpec({ provider: 'replay', script: script('p'), children } as unknown as ModelSpec, options);
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'ERR_MODEL_REPLAY_SCRIPT_INVALID' });
    expect((error as Error).message).toMatch(problem);
  });
});
