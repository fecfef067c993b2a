import { errorResult, invalidArgumentsResult } from './define-tool.js';
import type { Tool, ToolCallContext, ToolResult, ToolSchema } from './types.js';
import { checkArguments, describeParameters } from './validate.js';

/** The model's arguments for a call, checked against the tool's schema, or the failed result that says why not. */
export type ParsedArguments = { ok: true; args: Record<string, unknown> } | { ok: false; result: ToolResult };

/**
 * Parses the model's raw JSON arguments for a tool and checks them against its
 * schema, as {@link executeTool} does before it runs the tool: an empty string
 * counts as `{}`; malformed JSON, a value that is not an object, and arguments
 * that do not match come back as the failed result the model reads
 * (`ERR_TOOL_ARGS_JSON`, `ERR_TOOL_ARGS_INVALID`). For a runtime that carries
 * out a tool's call itself (the attempt loop's delegation) and needs the same
 * messages.
 */
export function parseToolArguments(schema: ToolSchema, rawArguments: string): ParsedArguments {
  const parsed = parseArgumentsObject(schema.name, rawArguments, describeParameters(schema.parameters));
  if (!parsed.ok) return parsed;
  const { args } = parsed;
  const problems = checkArguments(schema.parameters, args);
  if (problems !== undefined) return { ok: false, result: invalidArgumentsResult(schema, problems) };
  return { ok: true, args: args as Record<string, unknown> };
}

/**
 * The model's raw arguments for the tool `name` as a JSON object, before any
 * schema check: an empty string counts as `{}`; malformed JSON and a value that
 * is not an object come back as the failed result the model reads
 * (`ERR_TOOL_ARGS_JSON`), naming the tool's `fields`. Every kind of tool
 * (built-in, client-executed) parses its arguments here.
 */
export function parseArgumentsObject(name: string, rawArguments: string, fields: string): ParsedArguments {
  const text = rawArguments.trim();
  let args: unknown = {};
  if (text !== '') {
    try {
      args = JSON.parse(text);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return {
        ok: false,
        result: {
          ok: false,
          content: `The arguments for ${name} are not valid JSON (${detail}). Send one JSON object with these fields: ${fields}.`,
          code: 'ERR_TOOL_ARGS_JSON',
        },
      };
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return {
      ok: false,
      result: {
        ok: false,
        content: `The arguments for ${name} must be a JSON object, not ${args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`}. Fields: ${fields}.`,
        code: 'ERR_TOOL_ARGS_JSON',
      },
    };
  }
  return { ok: true, args: args as Record<string, unknown> };
}

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
    const parsed = tool.parseArguments
      ? tool.parseArguments(rawArguments)
      : parseToolArguments(tool.schema, rawArguments);
    if (!parsed.ok) return parsed.result;
    const result = await tool.execute(parsed.args, call);
    if (typeof result?.ok !== 'boolean' || typeof result.content !== 'string') {
      return errorResult(tool.name, new Error('the tool returned no result'));
    }
    return result;
  } catch (error) {
    return errorResult(tool.name, error);
  }
}
