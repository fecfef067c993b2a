import { createBashTool } from './builtin/bash.js';
import { createClarifyTool } from './builtin/clarify.js';
import { createDelegateParallelTool, createDelegateTaskTool, createEscalateTool } from './builtin/crew.js';
import { createListDirTool } from './builtin/list-dir.js';
import { createMemoryRecallTool, createMemorySaveTool } from './builtin/memory.js';
import { createPatchTool } from './builtin/patch.js';
import { createReadFileTool } from './builtin/read-file.js';
import { createReadSkillFileTool, createReadSkillTool, createSkillManageTool } from './builtin/skill.js';
import { createTodoTool } from './builtin/todo.js';
import { createWriteFileTool } from './builtin/write-file.js';
import { ToolError } from './errors.js';
import { createToolEnvironment, type ToolEnvironment } from './tool-environment.js';
import type { RunContext, Tool } from './types.js';

/** The built-in tools, by name. */
export const BUILTIN_TOOL_NAMES = [
  'bash',
  'read_file',
  'write_file',
  'list_dir',
  'patch',
  'todo',
  'clarify',
  'memory_save',
  'memory_recall',
  'read_skill',
  'read_skill_file',
  'skill_manage',
  'delegate_task',
  'delegate_parallel',
  'escalate',
] as const;

/** A built-in tool name. */
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

const FACTORIES: Record<BuiltinToolName, (environment: ToolEnvironment) => Tool> = {
  bash: createBashTool,
  read_file: createReadFileTool,
  write_file: createWriteFileTool,
  list_dir: createListDirTool,
  patch: createPatchTool,
  todo: createTodoTool,
  clarify: createClarifyTool,
  delegate_task: createDelegateTaskTool,
  delegate_parallel: createDelegateParallelTool,
  escalate: createEscalateTool,
  memory_save: createMemorySaveTool,
  memory_recall: createMemoryRecallTool,
  read_skill: createReadSkillTool,
  read_skill_file: createReadSkillFileTool,
  skill_manage: createSkillManageTool,
};

function isBuiltin(name: string): name is BuiltinToolName {
  return Object.hasOwn(FACTORIES, name);
}

/**
 * Makes the named tools for one run (one attempt), in the order given
 * (a repeated name gives one tool). The context is validated once and shared.
 * @throws ToolError `ERR_TOOL_UNKNOWN` for a name without a factory,
 *   `ERR_TOOL_INVALID_CONTEXT` for an unusable context
 */
export function createTools(ctx: RunContext, names: readonly string[]): Tool[] {
  const unknown = names.filter((name) => !isBuiltin(name));
  if (unknown.length > 0) {
    throw new ToolError(
      'ERR_TOOL_UNKNOWN',
      `No tool factory for ${unknown.map((name) => JSON.stringify(name)).join(', ')}; the tools are ${BUILTIN_TOOL_NAMES.join(', ')}`,
    );
  }
  const environment = createToolEnvironment(ctx);
  return [...new Set(names as readonly BuiltinToolName[])].map((name) => FACTORIES[name](environment));
}
