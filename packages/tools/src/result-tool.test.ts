import { describe, expect, it } from 'vitest';
import { checkOutputSpec, createSubmitResultTool, SUBMIT_RESULT_TOOL } from './result-tool.js';

const verdict = {
  type: 'object',
  properties: { verdict: { type: 'string', enum: ['pass', 'fail'] }, score: { type: 'integer', minimum: 0 } },
  required: ['verdict'],
  additionalProperties: false,
};

describe('checkOutputSpec', () => {
  it('accepts an object schema that compiles', () => {
    expect(checkOutputSpec({ schema: verdict })).toBeUndefined();
    expect(checkOutputSpec({ schema: { type: 'object' }, maxAttempts: 1 })).toBeUndefined();
  });

  it('refuses a schema whose type is not "object", naming the field and the type', () => {
    expect(checkOutputSpec({ schema: { type: 'array' } })).toBe(
      'output.schema must be a JSON Schema with "type": "object" (the parameters of the submit_result tool); its type is "array".',
    );
    expect(checkOutputSpec({ schema: { properties: {} } })).toMatch(/its type is none\.$/);
  });

  it('refuses a schema that does not compile, with Ajv’s reason', () => {
    expect(checkOutputSpec({ schema: { type: 'object', properties: { a: { type: 'nope' } } } })).toMatch(
      /^output\.schema is not a valid JSON Schema: /,
    );
    // Patterns run on RE2: a lookahead does not compile.
    expect(
      checkOutputSpec({
        schema: { type: 'object', properties: { a: { type: 'string', pattern: '(?=a)' } } },
      }),
    ).toMatch(/^output\.schema is not a valid JSON Schema: /);
  });

  it('refuses a schema of more than 64 KB of JSON', () => {
    const big = { type: 'object', description: 'x'.repeat(65_536) };
    expect(checkOutputSpec({ schema: big })).toMatch(
      /^output\.schema: \d+ bytes of JSON, more than the 65536/,
    );
  });
});

describe('createSubmitResultTool', () => {
  const tool = createSubmitResultTool(verdict);

  it('offers the schema as its parameters, under its own name', () => {
    expect(tool.name).toBe(SUBMIT_RESULT_TOOL);
    expect(tool.schema.parameters).toBe(verdict);
    expect(tool.schema.description).toMatch(/Call it once/);
  });

  it('checks arguments as a client tool’s are, naming each problem', () => {
    expect(tool.parseArguments?.('{"verdict":"pass","score":3}')).toEqual({
      ok: true,
      args: { verdict: 'pass', score: 3 },
    });
    const invalid = tool.parseArguments?.('{"score":-1,"extra":true}');
    expect(invalid?.ok).toBe(false);
    const content = invalid && !invalid.ok ? invalid.result.content : '';
    expect(content).toMatch(/^Invalid arguments for submit_result: /);
    expect(content).toContain('missing required field `verdict`');
    expect(content).toContain('unknown field `extra`');
    expect(tool.parseArguments?.('not json')).toMatchObject({
      ok: false,
      result: { code: 'ERR_TOOL_ARGS_JSON' },
    });
  });
});
