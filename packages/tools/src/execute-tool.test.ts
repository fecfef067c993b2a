import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineTool } from './define-tool.js';
import { ToolError } from './errors.js';
import { createTools, executeTool, jsonSchemaArguments } from './index.js';
import { DEFAULT_TOOL_LIMITS, resolveLimits } from './limits.js';
import { callContext, createFixture, type Fixture } from './testing/fixtures.js';
import type { Tool } from './types.js';
import { describeParameters, fieldName } from './validate.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

const schema = {
  name: 'probe',
  toolset: 'test',
  description: 'test tool',
  parameters: Type.Object(
    { text: Type.String(), count: Type.Optional(Type.Integer({ minimum: 1 })) },
    { additionalProperties: false },
  ),
};

describe('executeTool', () => {
  it('parses, validates and runs', async () => {
    const tool = defineTool(schema, async (args) => ({
      ok: true,
      content: `${args.text} x${args.count ?? 1}`,
    }));
    expect(await executeTool(tool, '{"text":"hi","count":2}', callContext())).toEqual({
      ok: true,
      content: 'hi x2',
    });
  });

  it('turns malformed JSON into a result naming the parameters', async () => {
    const tool = defineTool(schema, async () => ({ ok: true, content: '' }));
    const result = await executeTool(tool, '{"text": "unterminated', callContext());
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_JSON' });
    expect(result.content).toMatch(
      /^The arguments for probe are not valid JSON \(.+\)\. Send one JSON object/,
    );
    expect(result.content).toContain('text: string, count?: integer >= 1');
  });

  it('refuses arguments that are not an object', async () => {
    const tool = defineTool(schema, async () => ({ ok: true, content: '' }));
    for (const raw of ['[]', '"text"', 'null', '3']) {
      expect(await executeTool(tool, raw, callContext()), raw).toMatchObject({
        ok: false,
        code: 'ERR_TOOL_ARGS_JSON',
      });
    }
  });

  it('treats an empty argument string as {}', async () => {
    const result = await executeTool(fx.tool('list_dir'), '  ', callContext());
    expect(result).toEqual({ ok: true, content: '"." is an empty directory.' });
  });

  it('names each field and problem', async () => {
    const tool = defineTool(schema, async () => ({ ok: true, content: '' }));
    const result = await executeTool(tool, '{"count":0,"txt":"a"}', callContext());
    expect(result).toEqual({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
      content:
        'Invalid arguments for probe: missing required field `text`; unknown field `txt`; `count`: expected integer to be greater or equal to 1 (got 0). Parameters: text: string, count?: integer >= 1.',
    });
  });

  it('never throws: errors inside a tool become results', async () => {
    const boom = defineTool(schema, async () => {
      throw new Error('disk on fire');
    });
    expect(await executeTool(boom, '{"text":"a"}', callContext())).toEqual({
      ok: false,
      code: 'ERR_TOOL_INTERNAL',
      content:
        'The probe tool failed unexpectedly: disk on fire. This is not caused by your arguments; try again or take another approach.',
    });
    const known = defineTool(schema, async () => {
      throw new ToolError('ERR_TOOL_NOT_FOUND', 'no such thing');
    });
    expect(await executeTool(known, '{"text":"a"}', callContext())).toEqual({
      ok: false,
      code: 'ERR_TOOL_NOT_FOUND',
      content: 'no such thing',
    });
    const raw: Tool = {
      name: 'raw',
      schema: { ...schema, name: 'raw' },
      execute: () => Promise.reject(new Error('rejected')),
    };
    expect(await executeTool(raw, '{"text":"a"}', callContext())).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_INTERNAL',
    });
    const sloppy = { ...raw, execute: async () => undefined } as unknown as Tool;
    expect(await executeTool(sloppy, '{"text":"a"}', callContext())).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_INTERNAL',
    });
  });

  it('validates in execute too, for callers that bypass executeTool', async () => {
    const tool = defineTool(schema, async () => ({ ok: true, content: 'ran' }));
    expect(await tool.execute({ text: 5 }, callContext())).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
    });
  });

  it('does not start a cancelled call', async () => {
    let ran = false;
    const tool = defineTool(schema, async () => {
      ran = true;
      return { ok: true, content: '' };
    });
    const controller = new AbortController();
    controller.abort();
    expect(await executeTool(tool, '{"text":"a"}', callContext(controller.signal))).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_CANCELLED',
    });
    expect(ran).toBe(false);
  });

  it("checks a tool's plain JSON Schema with its own parser, not the TypeBox check", async () => {
    const parameters = {
      type: 'object',
      properties: { a: { type: 'number' } },
      required: ['a'],
      additionalProperties: false,
    };
    const received: unknown[] = [];
    const tool: Tool = {
      name: 'srv__sum',
      server: 'srv',
      schema: { name: 'srv__sum', toolset: 'mcp', description: 'sum', parameters: parameters as never },
      parseArguments: jsonSchemaArguments({ name: 'srv__sum', parameters }),
      async execute(args) {
        received.push(args);
        return { ok: true, content: 'done' };
      },
    };
    expect(await executeTool(tool, '{"a":2}', callContext())).toEqual({ ok: true, content: 'done' });
    expect(await executeTool(tool, '{"a":"2","b":1}', callContext())).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
      content: expect.stringMatching(
        /^Invalid arguments for srv__sum: unknown field `b`; `a` must be number\. Parameters: a: number\.$/,
      ),
    });
    expect(received).toEqual([{ a: 2 }]);
  });
});

describe('createTools', () => {
  it('makes the named tools, once each, with their catalog schemas', () => {
    const tools = createTools(fx.context(), ['patch', 'todo', 'patch']);
    expect(tools.map((tool) => tool.name)).toEqual(['patch', 'todo']);
    expect(tools[0]?.schema.toolset).toBe('base');
  });

  it('refuses unknown names', () => {
    expect(() => createTools(fx.context(), ['bash', 'no_such_tool'])).toThrow(
      expect.objectContaining({
        code: 'ERR_TOOL_UNKNOWN',
        message: expect.stringContaining('"no_such_tool"'),
      }),
    );
  });

  it('refuses an unusable context, naming the field', () => {
    const bad = (overrides: object) => () => createTools({ ...fx.context(), ...overrides }, ['bash']);
    expect(bad({ workspace: 'relative/path' })).toThrow(/workspace must be an absolute path/);
    expect(bad({ sandbox: 'docker' })).toThrow(/sandbox must be one of bwrap, none, auto/);
    expect(bad({ locale: 'fr' })).toThrow(/locale/);
    expect(bad({ env: { 'BAD-NAME': 'x' } })).toThrow(/not a variable name/);
    expect(bad({ limits: { bashTimeoutMs: 10 } })).toThrow(
      'limits.bashTimeoutMs must be an integer >= 100 (got 10)',
    );
    expect(bad({ limits: { bashTimeoutMs: 5000, bashMaxTimeoutMs: 1000 } })).toThrow(
      'limits.bashTimeoutMs (5000) must be <= limits.bashMaxTimeoutMs (1000)',
    );
    expect(bad({ limits: { bashTimeout: 5 } })).toThrow('limits.bashTimeout is not a known tool limit');
  });
});

describe('limits', () => {
  it('merges overrides over the defaults', () => {
    expect(resolveLimits({ listDirMaxEntries: 7 })).toEqual({ ...DEFAULT_TOOL_LIMITS, listDirMaxEntries: 7 });
    expect(DEFAULT_TOOL_LIMITS.bashTimeoutMs).toBe(120_000);
    expect(() => resolveLimits({ listDirDefaultDepth: 5, listDirMaxDepth: 3 })).toThrow(
      /listDirDefaultDepth/,
    );
  });
});

describe('validation messages', () => {
  it.each([
    ['', 'arguments'],
    ['/path', 'path'],
    ['/todos/0/status', 'todos[0].status'],
    ['/a~1b', 'a/b'],
  ])('fieldName(%j) is %j', (pointer, expected) => {
    expect(fieldName(pointer)).toBe(expected);
  });

  it('describes parameters', () => {
    expect(describeParameters(Type.Object({}))).toBe('(none)');
  });
});
