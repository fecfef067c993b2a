import { TetherError, type TetherErrorOptions } from '@tether/protocol';

/**
 * Every code this package uses, with what it means. `docs/tools.md` lists the
 * same codes; `errors.test.ts` keeps the two in sync.
 */
export const TOOL_ERROR_CODES = {
  ERR_TOOL_UNKNOWN: 'A tool name has no schema or no factory.',
  ERR_TOOL_DUPLICATE_SCHEMA: 'registerSchema was given a name that is already registered.',
  ERR_TOOL_INVALID_CONTEXT: 'createTools was given an unusable run context (relative workspace, bad limits).',
  ERR_TOOL_ARGS_JSON: 'The model sent arguments that are not a JSON object.',
  ERR_TOOL_ARGS_INVALID: "The arguments do not match the tool's parameters.",
  ERR_TOOL_INTERNAL: 'A tool failed in a way it did not anticipate.',
  ERR_TOOL_CANCELLED: 'The run or the call was cancelled.',
  ERR_TOOL_PATH_INVALID:
    'A path is empty, contains a NUL byte, or is too long for the file system (a name over 255 bytes, a path over 4,096 bytes).',
  ERR_TOOL_PATH_OUTSIDE: 'A path resolves outside the workspace, directly or through a symbolic link.',
  ERR_TOOL_PATH_SYMLINK:
    'A path ends in a dangling or looping symbolic link, or one appeared while the file was opened.',
  ERR_TOOL_NOT_FOUND: 'The file or directory does not exist.',
  ERR_TOOL_NOT_A_FILE: 'A file tool was pointed at a directory or a special file.',
  ERR_TOOL_NOT_A_DIRECTORY: 'list_dir was pointed at a file, or a parent in the path is a file.',
  ERR_TOOL_FILE_BINARY: 'read_file or patch was pointed at a binary file.',
  ERR_TOOL_FILE_ENCODING: 'patch was pointed at a file that is not valid UTF-8.',
  ERR_TOOL_FILE_TOO_LARGE: 'A file or content exceeds the size limit of the tool.',
  ERR_TOOL_OFFSET_OUT_OF_RANGE: 'read_file was given an offset past the end of the file.',
  ERR_TOOL_IO: 'The file system refused an operation (permissions, disk full, read-only).',
  ERR_TOOL_PATCH_EMPTY_SEARCH: 'patch was given an empty old_string.',
  ERR_TOOL_PATCH_NO_MATCH: 'patch found no match for old_string.',
  ERR_TOOL_PATCH_AMBIGUOUS: 'patch found several matches and replace_all was not set.',
  ERR_TOOL_PATCH_FUZZY_REPLACE_ALL: 'replace_all was set but old_string only matched approximately.',
  ERR_TOOL_PATCH_IDENTICAL: 'old_string and new_string are identical.',
  ERR_TOOL_PATCH_ESCAPE_DRIFT:
    'old_string matched, but not exactly, and new_string holds `\\\'` or `\\"` that the file does not have there (quotes escaped by mistake).',
  ERR_TOOL_TODO_DUPLICATE_ID: 'The todo update lists the same id twice.',
  ERR_TOOL_TODO_INCOMPLETE_ITEM: 'A new todo item has no content.',
  ERR_TOOL_TODO_TOO_MANY: 'The todo list would exceed its maximum number of items.',
  ERR_TOOL_TODO_MULTIPLE_IN_PROGRESS: 'The todo list would have more than one item in_progress.',
  ERR_TOOL_BASH_EXIT: 'The command exited with a non-zero code or was killed by a signal.',
  ERR_TOOL_BASH_TIMEOUT: 'The command ran past its timeout and was killed with all its processes.',
  ERR_TOOL_SANDBOX_UNAVAILABLE: 'The sandbox mode is bwrap but bubblewrap does not work on this host.',
  ERR_TOOL_SPAWN_FAILED: 'The command could not be started.',
  ERR_TOOL_MEMORY_UNAVAILABLE: 'A memory tool ran in a host that keeps no memory for the run.',
  ERR_TOOL_MEMORY_REFUSED:
    'memory_save was given content (or a tag) that reads as an instruction to a model or holds a secret (the content guard).',
  ERR_TOOL_MEMORY_DUPLICATE:
    'memory_save was given content that the scope holds already, as the entry named.',
  ERR_TOOL_MEMORY_NOT_FOUND: 'memory_save was asked to replace an entry the scope does not hold.',
  ERR_TOOL_MEMORY_FULL:
    'memory_save would take the scope past its entries or bytes (TETHER_MEMORY_MAX_ENTRIES, TETHER_MEMORY_MAX_BYTES); the message lists the oldest entries.',
  ERR_TOOL_SKILLS_UNAVAILABLE: 'A skill tool ran in a host that has no skill store.',
  ERR_TOOL_SKILL_NOT_FOUND:
    'No skill of that name, or the skill has no file at that path (the result lists what there is).',
  ERR_TOOL_SKILL_INVALID:
    'What skill_manage would write breaks the Agent Skills format (the name, a path, SKILL.md, a size); the result lists every problem.',
  ERR_TOOL_SKILL_REFUSED:
    'What skill_manage would write tries to instruct the model or holds a secret (the content guard).',
  ERR_TOOL_SKILL_EXISTS: 'skill_manage create named a skill that exists.',
  ERR_TOOL_SKILL_PINNED: 'skill_manage tried to change or delete a pinned skill.',
  ERR_TOOL_SKILL_CHANGED:
    'The skill changed between the read and the write of a skill_manage patch; nothing was written.',
  ERR_TOOL_SKILL_LIMIT: "The write would pass the tenant's skill count or bytes, or a skill's file count.",
  ERR_TOOL_MCP_FAILED:
    "An MCP server's tool reported an error (isError), or the server refused the call (a JSON-RPC error); the result quotes it.",
  ERR_TOOL_MCP_TIMEOUT: 'An MCP server did not answer a tool call within TETHER_MCP_CALL_TIMEOUT_MS.',
  ERR_TOOL_MCP_TOO_LARGE: "An MCP server's answer passed TETHER_MCP_MAX_RESPONSE_BYTES; it was dropped.",
  ERR_TOOL_MCP_UNAVAILABLE:
    'An MCP server could not be reached (or an operator stdio server started) for a call, after the run had listed its tools.',
} as const;

/** A stable code of this package. */
export type ToolErrorCode = keyof typeof TOOL_ERROR_CODES;

/**
 * An error a tool raises on purpose. The message is written for the model
 * (what failed, why, how to fix it); `executeTool` turns it into a failed
 * {@link ToolResult} and never lets it escape.
 */
export class ToolError extends TetherError {
  declare readonly code: ToolErrorCode;

  constructor(code: ToolErrorCode, message: string, options: TetherErrorOptions = {}) {
    super(code, message, options);
    this.name = 'ToolError';
  }
}

/** Whether `error` is a {@link ToolError}. */
export function isToolError(error: unknown): error is ToolError {
  return error instanceof ToolError;
}

/** The Node.js `code` of a system error (`ENOENT`, `ELOOP`...), if any. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
