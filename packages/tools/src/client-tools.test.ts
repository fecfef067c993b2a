import type { ClientTool } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { checkClientTools, compileClientTools } from './client-tools.js';

const weather: ClientTool = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', minLength: 1 }, days: { type: 'integer', minimum: 1 } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('checkClientTools', () => {
  it('accepts well-formed tools', () => {
    expect(checkClientTools([weather, { ...weather, name: 'other-tool_2' }], ['bash'])).toBeUndefined();
  });

  it('refuses a name that clashes with a built-in tool of the run, naming it', () => {
    expect(checkClientTools([{ ...weather, name: 'bash' }], ['bash', 'todo'])).toMatch(
      /"bash" is the name of a built-in tool/,
    );
  });

  it('refuses a name given twice, and a malformed one', () => {
    expect(checkClientTools([weather, weather], [])).toMatch(/"get_weather" is declared twice/);
    expect(checkClientTools([{ ...weather, name: 'has space' }], [])).toMatch(/must match/);
  });

  it('refuses a schema that is not an object schema, or does not compile', () => {
    expect(checkClientTools([{ ...weather, parameters: { type: 'string' } }], [])).toMatch(
      /"type": "object"/,
    );
    expect(
      checkClientTools(
        [{ ...weather, parameters: { type: 'object', properties: { a: { type: 'nope' } } } }],
        [],
      ),
    ).toMatch(/not a valid JSON Schema/);
    expect(checkClientTools([{ ...weather, parameters: { type: 'object', required: 'city' } }], [])).toMatch(
      /not a valid JSON Schema/,
    );
  });

  it('refuses more than 64 tools, and more than 64 KB of schemas', () => {
    const many = Array.from({ length: 65 }, (_, i) => ({ ...weather, name: `t${i}` }));
    expect(checkClientTools(many, [])).toMatch(/at most 64/);
    expect(checkClientTools(many.slice(0, 64), [])).toBeUndefined();
    const big = { type: 'object', description: 'x'.repeat(65_536) };
    expect(checkClientTools([{ ...weather, parameters: big }], [])).toMatch(/more than the 65536 allowed/);
  });
});

describe('compileClientTools', () => {
  const [tool] = compileClientTools([weather]);
  if (!tool) throw new Error('no tool');

  it('parses valid arguments', () => {
    expect(tool.parse('{"city":"Oslo","days":2}')).toEqual({ ok: true, args: { city: 'Oslo', days: 2 } });
  });

  it('words invalid arguments for the model, naming the fields', () => {
    const result = tool.parse('{"days":0,"extra":1}');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.result.code).toBe('ERR_TOOL_ARGS_INVALID');
    expect(result.result.content).toContain('Invalid arguments for get_weather');
    expect(result.result.content).toContain('missing required field `city`');
    expect(result.result.content).toContain('unknown field `extra`');
    expect(result.result.content).toContain('`days` must be >= 1');
    expect(result.result.content).toContain('Parameters: city: string, days?: integer');
  });

  it('refuses malformed JSON and values that are not objects', () => {
    expect(tool.parse('{"city":')).toMatchObject({ ok: false, result: { code: 'ERR_TOOL_ARGS_JSON' } });
    expect(tool.parse('[1]')).toMatchObject({ ok: false, result: { code: 'ERR_TOOL_ARGS_JSON' } });
  });
});

describe('patterns in client tool schemas', () => {
  const tool = (pattern: string): ClientTool => ({
    name: 'match',
    description: 'Matches',
    parameters: { type: 'object', properties: { text: { type: 'string', pattern } } },
  });

  it('run in linear time: a backtracking pattern cannot stall the worker', () => {
    const [compiled] = compileClientTools([tool('^(a|a)*$')]);
    const started = performance.now();
    // With a backtracking engine, 40 characters of this take longer than anyone would wait.
    const result = compiled?.parse(JSON.stringify({ text: `${'a'.repeat(40)}b` }));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result).toMatchObject({ ok: false, result: { code: 'ERR_TOOL_ARGS_INVALID' } });
    expect(compiled?.parse(JSON.stringify({ text: 'aaaa' }))).toMatchObject({ ok: true });
    const [properties] = compileClientTools([
      {
        name: 'props',
        description: 'Props',
        parameters: { type: 'object', patternProperties: { '^x-[a-z]+$': { type: 'integer' } } },
      },
    ]);
    expect(properties?.parse('{"x-one":"not a number"}')).toMatchObject({ ok: false });
    expect(properties?.parse('{"x-one":1}')).toMatchObject({ ok: true });
  });

  it('refuses at submit a pattern RE2 cannot run (lookaround, backreferences), saying so', () => {
    expect(checkClientTools([tool('^(?=a)a$')], [])).toMatch(
      /the parameters of "match" are not a valid JSON Schema/,
    );
    expect(checkClientTools([tool('^(a)\\1$')], [])).toMatch(/not a valid JSON Schema/);
  });
});
