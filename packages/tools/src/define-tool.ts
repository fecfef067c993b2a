import type { Static, TSchema } from '@sinclair/typebox';
import { isToolError } from './errors.js';
import type { Tool, ToolCallContext, ToolResult, ToolSchema } from './types.js';
import { checkArguments, describeParameters } from './validate.js';

/** The body of a tool: receives arguments that already match the schema. */
export type ToolBody<P extends TSchema> = (args: Static<P>, call: ToolCallContext) => Promise<ToolResult>;

/**
 * Turns any thrown value into a failed result: a {@link ToolError} keeps its
 * model-facing message and code; anything else becomes `ERR_TOOL_INTERNAL`.
 */
export function errorResult(toolName: string, error: unknown): ToolResult {
  if (isToolError(error)) return { ok: false, content: error.message, code: error.code };
  const detail = error instanceof Error ? error.message : String(error);
  return {
    ok: false,
    content: `The ${toolName} tool failed unexpectedly: ${detail}. This is not caused by your arguments; try again or take another approach.`,
    code: 'ERR_TOOL_INTERNAL',
  };
}

/** The failed result for arguments that do not match the schema. */
export function invalidArgumentsResult(schema: ToolSchema, problems: string[]): ToolResult {
  return {
    ok: false,
    content: `Invalid arguments for ${schema.name}: ${problems.join('; ')}. Parameters: ${describeParameters(schema.parameters)}.`,
    code: 'ERR_TOOL_ARGS_INVALID',
  };
}

/**
 * Builds a {@link Tool} whose `execute` validates its arguments against the
 * schema and never rejects: errors become failed results.
 */
export function defineTool<P extends TSchema>(schema: ToolSchema<P>, body: ToolBody<P>): Tool {
  return {
    name: schema.name,
    schema,
    async execute(args: unknown, call: ToolCallContext): Promise<ToolResult> {
      try {
        const problems = checkArguments(schema.parameters, args);
        if (problems !== undefined) return invalidArgumentsResult(schema, problems);
        return await body(args as Static<P>, call);
      } catch (error) {
        return errorResult(schema.name, error);
      }
    },
  };
}
