/**
 * The tool catalog (design section 3): schemas only, no handlers. The prompt
 * builder asks it which tool names a set of toolsets holds; tool instances are
 * made per run by `createTools`. Importing this module registers every
 * built-in schema.
 */
import { bashSchema } from './builtin/bash.js';
import { clarifySchema } from './builtin/clarify.js';
import { delegateParallelSchema, delegateTaskSchema, escalateSchema } from './builtin/crew.js';
import { listDirSchema } from './builtin/list-dir.js';
import { memoryRecallSchema, memorySaveSchema } from './builtin/memory.js';
import { patchSchema } from './builtin/patch.js';
import { readFileSchema } from './builtin/read-file.js';
import { readSkillFileSchema, readSkillSchema, skillManageSchema } from './builtin/skill.js';
import { todoSchema } from './builtin/todo.js';
import { writeFileSchema } from './builtin/write-file.js';
import { ToolError } from './errors.js';
import type { ToolSchema } from './types.js';

/** The toolsets a run gets unless it asks otherwise. */
export const TOOLSET_DEFAULTS = ['base', 'planning', 'interaction'] as const;

/**
 * Every known toolset: `base` (bash, read_file, write_file, list_dir, patch),
 * `planning` (todo), `interaction` (clarify), the conditional `crew`
 * (delegate_task, delegate_parallel, escalate: a run gets it only when asked,
 * and the worker decides which of them a child may have), the conditional
 * `memory` (memory_save, memory_recall: a run's memory scope, only when asked),
 * and `skill` (read_skill, read_skill_file, skill_manage: the tenant's skills).
 */
export const TOOLSETS = ['base', 'planning', 'interaction', 'memory', 'skill', 'crew'] as const;

/** A known toolset name. */
export type Toolset = (typeof TOOLSETS)[number];

/** Tool names as model APIs accept them. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const catalog = new Map<string, ToolSchema>();

/**
 * Adds a schema to the catalog. Registering the same object again does
 * nothing; another schema under a taken name is refused.
 * @throws ToolError `ERR_TOOL_DUPLICATE_SCHEMA`, or `ERR_TOOL_INVALID_CONTEXT` for a malformed schema
 */
export function registerSchema(schema: ToolSchema): void {
  if (typeof schema.name !== 'string' || !TOOL_NAME.test(schema.name)) {
    throw new ToolError(
      'ERR_TOOL_INVALID_CONTEXT',
      `schema.name must match ${TOOL_NAME} (got ${JSON.stringify(schema.name)})`,
    );
  }
  if (typeof schema.toolset !== 'string' || schema.toolset === '') {
    throw new ToolError(
      'ERR_TOOL_INVALID_CONTEXT',
      `schema.toolset of ${schema.name} must be a non-empty string`,
    );
  }
  if (typeof schema.parameters !== 'object' || schema.parameters === null) {
    throw new ToolError(
      'ERR_TOOL_INVALID_CONTEXT',
      `schema.parameters of ${schema.name} must be a TypeBox schema`,
    );
  }
  const existing = catalog.get(schema.name);
  if (existing === schema) return;
  if (existing !== undefined) {
    throw new ToolError(
      'ERR_TOOL_DUPLICATE_SCHEMA',
      `A tool named ${JSON.stringify(schema.name)} is already registered (toolset ${existing.toolset})`,
    );
  }
  catalog.set(schema.name, schema);
}

/** The schema registered under `name`, if any. */
export function getSchema(name: string): ToolSchema | undefined {
  return catalog.get(name);
}

/** The schemas of one toolset, in registration order (`[]` for an empty or unknown toolset). */
export function getSchemasByToolset(toolset: string): ToolSchema[] {
  return [...catalog.values()].filter((schema) => schema.toolset === toolset);
}

/** The tool names of several toolsets, toolset by toolset, without duplicates. */
export function getAllToolNames(toolsets: readonly string[]): string[] {
  const names = new Set<string>();
  for (const toolset of toolsets) {
    for (const schema of getSchemasByToolset(toolset)) names.add(schema.name);
  }
  return [...names];
}

for (const schema of [
  bashSchema,
  readFileSchema,
  writeFileSchema,
  listDirSchema,
  patchSchema,
  todoSchema,
  clarifySchema,
  delegateTaskSchema,
  delegateParallelSchema,
  escalateSchema,
  memorySaveSchema,
  memoryRecallSchema,
  readSkillSchema,
  readSkillFileSchema,
  skillManageSchema,
]) {
  registerSchema(schema);
}
