import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import {
  BUILTIN_TOOL_NAMES,
  CREW_TOOL_NAMES,
  getAllToolNames,
  getSchema,
  getSchemasByToolset,
  MEMORY_TOOL_NAMES,
  registerSchema,
  SKILL_TOOL_NAMES,
  TOOLSET_DEFAULTS,
  TOOLSETS,
} from './index.js';

describe('catalog', () => {
  it('registers every built-in schema on import, in its toolset', () => {
    expect(TOOLSET_DEFAULTS).toEqual(['base', 'planning', 'interaction']);
    expect(getSchemasByToolset('base').map((s) => s.name)).toEqual([
      'bash',
      'read_file',
      'write_file',
      'list_dir',
      'patch',
    ]);
    expect(getSchemasByToolset('planning').map((s) => s.name)).toEqual(['todo']);
    expect(getSchemasByToolset('interaction').map((s) => s.name)).toEqual(['clarify']);
    expect(getAllToolNames(TOOLSET_DEFAULTS)).toEqual([
      'bash',
      'read_file',
      'write_file',
      'list_dir',
      'patch',
      'todo',
      'clarify',
    ]);
  });

  it('puts the crew tools in crew, the memory tools in memory, the skill tools in skill, returns nothing for unknown toolsets', () => {
    expect(TOOLSETS).toEqual(['base', 'planning', 'interaction', 'memory', 'skill', 'crew']);
    expect(getSchemasByToolset('crew').map((s) => s.name)).toEqual([...CREW_TOOL_NAMES]);
    expect(CREW_TOOL_NAMES).toEqual(['delegate_task', 'delegate_parallel', 'escalate']);
    expect(getSchemasByToolset('memory').map((s) => s.name)).toEqual([...MEMORY_TOOL_NAMES]);
    expect(getSchemasByToolset('skill').map((s) => s.name)).toEqual([...SKILL_TOOL_NAMES]);
    expect(SKILL_TOOL_NAMES).toEqual(['read_skill', 'read_skill_file', 'skill_manage']);
    expect(getSchemasByToolset('no-such-toolset')).toEqual([]);
    expect(getAllToolNames(['base', 'crew'])).toEqual([
      'bash',
      'read_file',
      'write_file',
      'list_dir',
      'patch',
      'delegate_task',
      'delegate_parallel',
      'escalate',
    ]);
    // Every catalog tool has a factory.
    expect(getAllToolNames(TOOLSETS)).toEqual([...BUILTIN_TOOL_NAMES]);
  });

  it('lists names without duplicates, toolset by toolset', () => {
    expect(getAllToolNames(['interaction', 'planning', 'interaction'])).toEqual(['clarify', 'todo']);
    expect(getAllToolNames([])).toEqual([]);
  });

  it("keeps patch's parameters exactly as the design's 4.1", () => {
    const parameters = getSchema('patch')?.parameters;
    expect(Object.keys(parameters?.properties ?? {})).toEqual([
      'path',
      'old_string',
      'new_string',
      'replace_all',
    ]);
    expect(parameters?.required).toEqual(['path', 'old_string', 'new_string']);
    expect(parameters?.properties.replace_all.type).toBe('boolean');
  });

  it("keeps clarify's parameters as the design's 5.2 (at most four choices)", () => {
    const parameters = getSchema('clarify')?.parameters;
    expect(parameters?.required).toEqual(['question']);
    expect(parameters?.properties.choices.maxItems).toBe(4);
  });

  it('gives the todo items the protocol shape (design 6.3)', () => {
    const item = getSchema('todo')?.parameters.properties.todos.items;
    expect(Object.keys(item.properties)).toEqual(['id', 'content', 'status']);
    expect(item.properties.status.anyOf.map((s: { const: string }) => s.const)).toEqual([
      'pending',
      'in_progress',
      'completed',
      'cancelled',
    ]);
  });

  it('accepts a new schema, ignores registering it again, refuses another under the same name', () => {
    const schema = {
      name: 'catalog_test_tool',
      toolset: 'catalog-test',
      description: 'test',
      parameters: Type.Object({}),
    };
    registerSchema(schema);
    registerSchema(schema);
    expect(getSchemasByToolset('catalog-test')).toEqual([schema]);
    expect(() => registerSchema({ ...schema })).toThrow(
      expect.objectContaining({ code: 'ERR_TOOL_DUPLICATE_SCHEMA' }),
    );
    expect(() => registerSchema({ ...schema, name: 'bash' })).toThrow(
      expect.objectContaining({ code: 'ERR_TOOL_DUPLICATE_SCHEMA' }),
    );
  });

  it('refuses malformed schemas', () => {
    const parameters = Type.Object({});
    expect(() => registerSchema({ name: 'bad name', toolset: 'x', description: '', parameters })).toThrow(
      /schema.name/,
    );
    expect(() => registerSchema({ name: 'ok_name', toolset: '', description: '', parameters })).toThrow(
      /schema.toolset/,
    );
  });
});
