import { errorResult, invalidArgumentsResult } from './define-tool.js';
import type { Tool, ToolCallContext, ToolResult } from './types.js';
import { checkArguments, describeParameters } from './validate.js';

/**
 * Runs one tool call from the model's raw JSON arguments. Never throws:
 * malformed JSON, arguments that do not match the schema, cancellation and any
 * error inside the tool all come back as `{ ok: false, content }`, with content
 * the model can act on. An empty argument string counts as `{}`.
 */
export async function executeTool(
  tool: Tool,
  rawArguments: string,
  call: ToolCallContext,
): Promise<ToolResult> {
  try {
    if (call.signal.aborted) {
      return {
        ok: false,
        content: `The ${tool.name} call was cancelled before it started.`,
        code: 'ERR_TOOL_CANCELLED',
      };
    }
    const text = rawArguments.trim();
    let args: unknown = {};
    if (text !== '') {
      try {
        args = JSON.parse(text);
      } catch (error) {
        const detail = error instanceof Error ? error.message : String(error);
        return {
          ok: false,
          content: `The arguments for ${tool.name} are not valid JSON (${detail}). Send one JSON object with these fields: ${describeParameters(tool.schema.parameters)}.`,
          code: 'ERR_TOOL_ARGS_JSON',
        };
      }
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return {
        ok: false,
        content: `The arguments for ${tool.name} must be a JSON object, not ${args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`}. Fields: ${describeParameters(tool.schema.parameters)}.`,
        code: 'ERR_TOOL_ARGS_JSON',
      };
    }
    const problems = checkArguments(tool.schema.parameters, args);
    if (problems !== undefined) return invalidArgumentsResult(tool.schema, problems);
    const result = await tool.execute(args, call);
    if (typeof result?.ok !== 'boolean' || typeof result.content !== 'string') {
      return errorResult(tool.name, new Error('the tool returned no result'));
    }
    return result;
  } catch (error) {
    return errorResult(tool.name, error);
  }
}
