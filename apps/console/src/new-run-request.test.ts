import { describe, expect, it } from 'vitest';
import { buildRequest, EMPTY_FORM, missingModel, type NewRunForm, withFile } from './new-run-request.js';

const form = (fields: Partial<NewRunForm>): NewRunForm => ({ ...EMPTY_FORM, ...fields });

describe('buildRequest', () => {
  it('sends the task alone while nothing else is set', () => {
    expect(buildRequest(form({ input: 'Summarise' }))).toEqual({
      body: { input: 'Summarise' },
      problems: [],
    });
  });

  it('writes every field where the API reads it: toolsets, locale, clarify.timeoutMs (from seconds), limits.maxSteps, files', () => {
    const { body, problems } = buildRequest(
      form({
        input: 'Fix it',
        toolsets: ['base', 'crew'],
        locale: 'zh',
        clarifyTimeout: ' 90 ',
        maxSteps: '12',
        files: [
          { path: 'a.md', content: 'A' },
          { path: 'src/b.ts', content: 'B' },
        ],
      }),
    );
    expect(problems).toEqual([]);
    expect(body).toEqual({
      input: 'Fix it',
      toolsets: ['base', 'crew'],
      locale: 'zh',
      clarify: { timeoutMs: 90_000 },
      limits: { maxSteps: 12 },
      files: { 'a.md': 'A', 'src/b.ts': 'B' },
    });
  });

  it('sends an empty toolset list when every box is unchecked, and none before the catalog is read', () => {
    expect(buildRequest(form({ input: 'x', toolsets: [] })).body.toolsets).toEqual([]);
    expect('toolsets' in buildRequest(form({ input: 'x' })).body).toBe(false);
  });

  it('leaves bounds to the API but refuses numbers that are not whole, naming the field', () => {
    expect(buildRequest(form({ input: 'x', maxSteps: '5000' })).body.limits).toEqual({ maxSteps: 5000 });
    expect(buildRequest(form({ input: 'x', maxSteps: '0' })).body.limits).toEqual({ maxSteps: 0 });
    for (const typed of ['1.5', 'ten', '1e3', '99999999999999999999']) {
      const { body, problems } = buildRequest(form({ input: 'x', maxSteps: typed, clarifyTimeout: typed }));
      expect(problems.map((problem) => problem.field)).toEqual(['clarifyTimeout', 'maxSteps']);
      expect(body).toEqual({ input: 'x' });
    }
  });

  it('merges Advanced into the body: objects field by field, anything else replacing', () => {
    const { body, problems } = buildRequest(
      form({
        input: 'x',
        toolsets: ['base'],
        clarifyTimeout: '60',
        advanced:
          '{"model":{"provider":"replay","script":[{"content":"hi"}]},"clarify":{"mode":"return"},"toolsets":["planning"]}',
      }),
    );
    expect(problems).toEqual([]);
    expect(body).toEqual({
      input: 'x',
      toolsets: ['planning'],
      clarify: { timeoutMs: 60_000, mode: 'return' },
      model: { provider: 'replay', script: [{ content: 'hi' }] },
    });
  });

  it('says what is wrong with an Advanced that is not a JSON object, and leaves it out', () => {
    const broken = buildRequest(form({ input: 'x', advanced: '{"model": ' }));
    expect(broken.body).toEqual({ input: 'x' });
    expect(broken.problems).toHaveLength(1);
    expect(broken.problems[0]?.field).toBe('advanced');
    expect(broken.problems[0]?.message).toMatch(/^Advanced is not valid JSON: /);
    for (const advanced of ['[1]', '"text"', 'null', '3']) {
      expect(buildRequest(form({ input: 'x', advanced })).problems[0]?.message).toMatch(
        /^Advanced must be a JSON object/,
      );
    }
    expect(buildRequest(form({ input: 'x', advanced: '  \n' })).problems).toEqual([]);
  });

  it('keeps a "__proto__" field of Advanced as a field (for the API to refuse), not as a prototype', () => {
    const { body } = buildRequest(form({ input: 'x', advanced: '{"__proto__": {"polluted": true}}' }));
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(JSON.stringify(body)).toBe('{"input":"x","__proto__":{"polluted":true}}');
  });
});

describe('buildRequest with a model', () => {
  it("sends the form's model, and merges Advanced's into it field by field", () => {
    const model: NewRunForm['model'] = { provider: 'replay', script: [{ content: 'hi' }] };
    expect(buildRequest(form({ input: 'x', model })).body).toEqual({ input: 'x', model });
    expect(
      buildRequest(form({ input: 'x', model, advanced: '{"model": {"script": [{"content": "bye"}]}}' })).body,
    ).toEqual({ input: 'x', model: { provider: 'replay', script: [{ content: 'bye' }] } });
    // The form's model is left as it was.
    expect(model).toEqual({ provider: 'replay', script: [{ content: 'hi' }] });
  });
});

describe('missingModel', () => {
  const none = { profiles: [], defaultProfile: null, replay: true };

  it('says why a run naming no model would be refused by a server without a default, before it is sent', () => {
    expect(missingModel({ input: 'x' }, none)).toBe(
      'No model is configured on this server, and this run names none: try the scripted example, or start the server with a model (see above).',
    );
    expect(missingModel({ input: 'x' }, { ...none, replay: false })).toBe(
      'No model is configured on this server, and this run names none: start the server with a model (see above).',
    );
    const profiles = [{ name: 'fast', provider: 'openai', model: null, default: false }];
    expect(missingModel({ input: 'x' }, { ...none, profiles })).toBe(
      'This server has no default model, and this run names none: name a profile in Advanced, such as {"model": {"profile": "fast"}}.',
    );
  });

  it('leaves the API to judge a model that is named, a server with a default, and an API that cannot say (404)', () => {
    expect(missingModel({ input: 'x', model: { provider: 'replay', script: [] } }, none)).toBeUndefined();
    expect(missingModel({ input: 'x', model: { profile: 'fast' } }, none)).toBeUndefined();
    expect(missingModel({ input: 'x' }, { ...none, defaultProfile: 'default' })).toBeUndefined();
    expect(missingModel({ input: 'x' }, undefined)).toBeUndefined();
    // Not an object: no model named; the message says so (the API would refuse it anyway).
    expect(missingModel({ input: 'x', model: 'gpt' }, none)).toMatch(/^No model is configured/);
  });
});

describe('withFile', () => {
  it('adds a new path at the end and replaces an existing one in its place', () => {
    const files = withFile(withFile([], 'a.md', 'one'), 'b.md', 'two');
    expect(withFile(files, 'a.md', 'three')).toEqual([
      { path: 'a.md', content: 'three' },
      { path: 'b.md', content: 'two' },
    ]);
  });
});
