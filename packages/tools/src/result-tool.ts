/**
 * A run's structured result (`output` of the body): the `submit_result` tool, whose parameters are
 * the run's `output.schema`, a tenant's plain JSON Schema like a client tool's. Checked once at
 * submit ({@link checkOutputSpec}) with the validator client tools use, and built for each attempt
 * ({@link createSubmitResultTool}). The attempt loop carries out its calls itself: a valid one ends
 * the run with its arguments as the result.
 */
import type { TSchema } from '@sinclair/typebox';
import { OUTPUT_LIMITS, type OutputSpec } from '@tether/protocol';
import { jsonSchemaArguments, schemaProblem } from './client-tools.js';
import type { Tool } from './types.js';

/** The tool a run with `output` ends through: a name no built-in tool or client tool of it may take. */
export const SUBMIT_RESULT_TOOL = 'submit_result';

const DESCRIPTION =
  'Submit the final result of the task. Call it once, when the work is done, with the result as its arguments; the run ends when the result is accepted. If the arguments do not match the schema, you are told why and must call it again.';

/**
 * What is wrong with a run's `output`, as a message naming the field, or undefined when it is
 * fine: a schema of more than {@link OUTPUT_LIMITS.schemaMaxBytes} bytes of JSON, whose `type` is
 * not `"object"` (it is a tool's parameters), or that does not compile.
 */
export function checkOutputSpec(output: OutputSpec): string | undefined {
  const { schema } = output;
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > OUTPUT_LIMITS.schemaMaxBytes) {
    return `output.schema: ${bytes} bytes of JSON, more than the ${OUTPUT_LIMITS.schemaMaxBytes} allowed.`;
  }
  if (schema.type !== 'object') {
    const given = schema.type === undefined ? 'none' : JSON.stringify(schema.type);
    return `output.schema must be a JSON Schema with "type": "object" (the parameters of the ${SUBMIT_RESULT_TOOL} tool); its type is ${given}.`;
  }
  const why = schemaProblem(schema);
  if (why !== undefined) return `output.schema is not a valid JSON Schema: ${why}`;
  return undefined;
}

/**
 * The `submit_result` tool of a run whose `output.schema` is `schema` (checked at submit; throws
 * when it no longer compiles). Its arguments are checked as a client tool's are
 * (`parseArguments`); the attempt loop carries out its calls (`output` of `AttemptParams`), and
 * `execute` only says the result was accepted, for a host that runs it as an ordinary tool.
 */
export function createSubmitResultTool(schema: Record<string, unknown>): Tool {
  const parseArguments = jsonSchemaArguments({ name: SUBMIT_RESULT_TOOL, parameters: schema });
  return {
    name: SUBMIT_RESULT_TOOL,
    schema: {
      name: SUBMIT_RESULT_TOOL,
      toolset: 'output',
      description: DESCRIPTION,
      // Plain JSON Schema, not TypeBox: `parseArguments` checks the arguments.
      parameters: schema as TSchema,
    },
    parseArguments,
    async execute() {
      return { ok: true, content: 'The result was accepted.' };
    },
  };
}
