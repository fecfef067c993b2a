export type { CompiledApprovalPolicy } from './approval-policy.js';
export { checkApprovalPolicy, compileApprovalPolicy } from './approval-policy.js';
export type { ClarifyArgs } from './builtin/clarify.js';
export { ClarifyParams, formatClarifyFallback } from './builtin/clarify.js';
export type { CrewTask, DelegateParallelArgs, DelegateTaskArgs, EscalateArgs } from './builtin/crew.js';
export {
  CREW_TOOL_NAMES,
  DelegateParallelParams,
  DelegateTaskParams,
  delegateParallelSchema,
  delegateTaskSchema,
  EscalateParams,
  escalateSchema,
} from './builtin/crew.js';
export type { MemoryRecallArgs, MemorySaveArgs } from './builtin/memory.js';
export {
  DEFAULT_RECALL_LIMIT,
  MEMORY_TOOL_NAMES,
  MemoryRecallParams,
  MemorySaveParams,
  memoryRecallSchema,
  memorySaveSchema,
  recallView,
} from './builtin/memory.js';
export type { SkillAction, SkillManageArgs } from './builtin/skill.js';
export {
  formatSkillList,
  ReadSkillFileParams,
  ReadSkillParams,
  readSkillFileSchema,
  readSkillSchema,
  SKILL_ACTIONS,
  SKILL_TOOL_NAMES,
  SkillManageParams,
  skillManageSchema,
} from './builtin/skill.js';
export type { Toolset } from './catalog.js';
export {
  getAllToolNames,
  getSchema,
  getSchemasByToolset,
  registerSchema,
  TOOLSET_DEFAULTS,
  TOOLSETS,
} from './catalog.js';
export type { CgroupSupport } from './cgroup.js';
export { cgroupSupport } from './cgroup.js';
export type { CompiledClientTool } from './client-tools.js';
export { checkClientTools, compileClientTools, jsonSchemaArguments } from './client-tools.js';
export type { SpawnerFailure } from './command-spawner.js';
export { onSpawnerFailure } from './command-spawner.js';
export type { ConfinedPath, ConfineOptions, PathRefusal } from './confine-path.js';
export { confinePath, MAX_NAME_BYTES, MAX_PATH_BYTES, pathLengthProblem } from './confine-path.js';
export type { BuiltinToolName } from './create-tools.js';
export { BUILTIN_TOOL_NAMES, createTools } from './create-tools.js';
export type { ToolBody } from './define-tool.js';
export { defineTool } from './define-tool.js';
export type { ToolErrorCode } from './errors.js';
export { isToolError, TOOL_ERROR_CODES, ToolError } from './errors.js';
export type { ParsedArguments } from './execute-tool.js';
export { executeTool, parseArgumentsObject, parseToolArguments } from './execute-tool.js';
export type { GuardKind, GuardPattern, GuardResult, GuardTarget } from './guard.js';
export { GUARD_PATTERNS, guardContent, INSTRUCTION_PATTERNS, SECRET_PATTERNS } from './guard.js';
export type { ToolLimits } from './limits.js';
export { DEFAULT_TOOL_LIMITS } from './limits.js';
export { checkOutputSpec, createSubmitResultTool, SUBMIT_RESULT_TOOL } from './result-tool.js';
export { killRunLeftovers, SandboxedProcess } from './run-command.js';
export type { BwrapProbe, SandboxUser } from './sandbox.js';
export {
  DEFAULT_SANDBOX_USER,
  probeBwrap,
  sandboxUserFor,
  unreachableBy,
  unsearchableAncestor,
} from './sandbox.js';
export type { ServerProgram } from './sandboxed-server.js';
export { startSandboxedServer } from './sandboxed-server.js';
export type { Checked, SkillDocument, SkillFrontmatter } from './skill/skill-format.js';
export {
  checkSkill,
  fileSizeProblem,
  parseSkillMd,
  SKILL_FILE,
  SKILL_KEYS,
  skillNameProblem,
  skillPathProblem,
} from './skill/skill-format.js';
export { DEFAULT_COMMAND_LEASE_MS } from './tool-environment.js';
export type {
  Locale,
  MemoryAccess,
  ReadOnlyBind,
  RunContext,
  SandboxMode,
  SkillsAccess,
  TodoStore,
  Tool,
  ToolCallContext,
  ToolLogger,
  ToolResult,
  ToolSchema,
} from './types.js';
export { SANDBOX_MODES } from './types.js';
export type { ResolvedPath, WorkspaceOptions } from './workspace.js';
export { Workspace, workspaceDir } from './workspace.js';
