/**
 * Client-executed tools: tools a run's submitter declares (`tools` of the
 * body) and runs itself. Their `parameters` are plain JSON Schema (draft-07),
 * not TypeBox, so they are compiled with Ajv, the validator Fastify uses:
 * once at submit, to refuse a schema that does not compile
 * ({@link checkClientTools}), and once per attempt, to check the model's
 * arguments before the client is asked ({@link compileClientTools}).
 * Unknown keywords are ignored (as JSON Schema says), known ones must be
 * well formed, and formats are ajv-formats'.
 */
import type { ClientTool } from '@tether/protocol';
import { CLIENT_TOOL_LIMITS, CLIENT_TOOL_NAME_PATTERN, RUN_LIMITS } from '@tether/protocol';
import { Ajv, type CodeOptions, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import { parseArgumentsObject } from './execute-tool.js';
import type { ToolResult } from './types.js';
import { fieldName } from './validate.js';

const NAME = new RegExp(CLIENT_TOOL_NAME_PATTERN);

/**
 * The `pattern` and `patternProperties` of a tenant's schemas run on RE2
 * (re2js): linear time, so a backtracking pattern (`^(a|a)*$`) cannot stall
 * the worker that checks a model's arguments, with every other tenant's runs
 * on it. RE2 has no lookaround or backreferences: a schema that uses them
 * does not compile, and is refused at submit.
 */
const re2: NonNullable<CodeOptions['regExp']> = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (text: string) => compiled.test(text) };
  },
  { code: 're2js' },
);
/** At most this many problems are listed in one message (as for built-in tools). */
const MAX_PROBLEMS = 5;

function newAjv(): Ajv {
  const ajv = new Ajv({
    strict: false,
    allErrors: true,
    coerceTypes: false,
    useDefaults: false,
    code: { regExp: re2 },
  });
  addFormats.default(ajv);
  return ajv;
}

/**
 * What is wrong with a run's client tools, as a message naming the tool and
 * the rule, or undefined when they are fine: a name that does not match
 * {@link CLIENT_TOOL_NAME_PATTERN}, is given twice or is a built-in tool of
 * the run (`builtinNames`); more than {@link RUN_LIMITS.maxClientTools}
 * tools; `parameters` of more than {@link CLIENT_TOOL_LIMITS.schemasMaxBytes}
 * bytes of JSON together; a schema whose `type` is not `"object"`, or that
 * does not compile.
 */
export function checkClientTools(
  tools: readonly ClientTool[],
  builtinNames: readonly string[],
): string | undefined {
  if (tools.length > RUN_LIMITS.maxClientTools) {
    return `tools: ${tools.length} tools, but a run may declare at most ${RUN_LIMITS.maxClientTools}.`;
  }
  const bytes = tools.reduce((sum, tool) => sum + Buffer.byteLength(JSON.stringify(tool.parameters)), 0);
  if (bytes > CLIENT_TOOL_LIMITS.schemasMaxBytes) {
    return `tools: the parameters schemas take ${bytes} bytes of JSON together, more than the ${CLIENT_TOOL_LIMITS.schemasMaxBytes} allowed.`;
  }
  if (tools.length === 0) return undefined;
  const seen = new Set<string>();
  const ajv = newAjv();
  for (const tool of tools) {
    const name = JSON.stringify(tool.name);
    if (!NAME.test(tool.name)) return `tools: the name ${name} must match ${CLIENT_TOOL_NAME_PATTERN}.`;
    if (builtinNames.includes(tool.name)) {
      return `tools: ${name} is the name of a built-in tool of this run's toolsets; give the client tool another name.`;
    }
    if (seen.has(tool.name)) return `tools: the name ${name} is declared twice.`;
    seen.add(tool.name);
    if (tool.parameters.type !== 'object') {
      return `tools: the parameters of ${name} must be a JSON Schema with "type": "object".`;
    }
    const why = schemaProblem(tool.parameters, ajv);
    if (why !== undefined) return `tools: the parameters of ${name} are not a valid JSON Schema: ${why}`;
  }
  return undefined;
}

/**
 * Why a tenant's JSON Schema does not compile as the model's arguments will be checked against it
 * (Ajv, formats, RE2 patterns), or undefined when it compiles: for every schema a run brings (its
 * client tools' parameters, its `output.schema`).
 */
export function schemaProblem(schema: Record<string, unknown>, ajv: Ajv = newAjv()): string | undefined {
  try {
    ajv.compile(schema);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** A client tool ready for an attempt: what the model is offered, and its arguments' check. */
export interface CompiledClientTool {
  name: string;
  description: string;
  /** The JSON Schema the model is offered. */
  parameters: Record<string, unknown>;
  /**
   * The model's raw JSON arguments parsed and checked against `parameters`,
   * or the failed result the model reads (`ERR_TOOL_ARGS_JSON`,
   * `ERR_TOOL_ARGS_INVALID`), worded as for a built-in tool.
   */
  parse(
    rawArguments: string,
  ): { ok: true; args: Record<string, unknown> } | { ok: false; result: ToolResult };
}

/** The client tools of a run, compiled once for an attempt (they were checked at submit). */
export function compileClientTools(tools: readonly ClientTool[]): CompiledClientTool[] {
  // An Ajv instance costs about a millisecond of CPU to build: a run without client tools needs none.
  if (tools.length === 0) return [];
  const ajv = newAjv();
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    parse: jsonSchemaArguments(tool, ajv),
  }));
}

/**
 * The check of the model's raw JSON arguments against a tool's plain JSON
 * Schema (compiled now with Ajv; throws when it does not compile), worded as
 * for a built-in tool: for tools whose schemas come from elsewhere (a
 * client's, an MCP server's).
 */
export function jsonSchemaArguments(
  tool: { name: string; parameters: Record<string, unknown> },
  ajv: Ajv = newAjv(),
): (rawArguments: string) => { ok: true; args: Record<string, unknown> } | { ok: false; result: ToolResult } {
  const validate = ajv.compile(tool.parameters);
  return (raw) => parseArguments(tool, validate, raw);
}

function parseArguments(
  tool: { name: string; parameters: Record<string, unknown> },
  validate: ValidateFunction,
  raw: string,
): { ok: true; args: Record<string, unknown> } | { ok: false; result: ToolResult } {
  const fields = describeFields(tool.parameters);
  const parsed = parseArgumentsObject(tool.name, raw, fields);
  if (!parsed.ok) return parsed;
  const { args } = parsed;
  if (validate(args)) return { ok: true, args: args as Record<string, unknown> };
  const problems = describeErrors(validate.errors ?? []);
  return {
    ok: false,
    result: {
      ok: false,
      content: `Invalid arguments for ${tool.name}: ${problems.join('; ')}. Parameters: ${fields}.`,
      code: 'ERR_TOOL_ARGS_INVALID',
    },
  };
}

/** Ajv's errors as the phrases the model reads for a built-in tool: one per field, at most five. */
function describeErrors(errors: readonly ErrorObject[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  let more = 0;
  for (const error of errors) {
    const params = error.params as { missingProperty?: string; additionalProperty?: string };
    let phrase: string;
    let path = error.instancePath;
    if (error.keyword === 'required' && params.missingProperty !== undefined) {
      path = `${path}/${params.missingProperty}`;
      phrase = `missing required field \`${fieldName(path)}\``;
    } else if (error.keyword === 'additionalProperties' && params.additionalProperty !== undefined) {
      path = `${path}/${params.additionalProperty}`;
      phrase = `unknown field \`${fieldName(path)}\``;
    } else {
      phrase = `\`${fieldName(path)}\` ${error.message ?? 'is invalid'}`;
    }
    if (seen.has(path)) continue;
    seen.add(path);
    if (problems.length < MAX_PROBLEMS) problems.push(phrase);
    else more++;
  }
  if (more > 0) problems.push(`${more} more problem(s)`);
  return problems;
}

/** `city: string, days?: integer` for an object schema's properties. */
function describeFields(schema: Record<string, unknown>): string {
  const properties = schema.properties as Record<string, { type?: unknown }> | undefined;
  if (!properties || typeof properties !== 'object') return '(see the tool description)';
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
  const entries = Object.entries(properties).map(([key, property]) => {
    const type = Array.isArray(property?.type) ? property.type.join(' | ') : (property?.type ?? 'value');
    return `${key}${required.includes(key) ? '' : '?'}: ${String(type)}`;
  });
  return entries.length === 0 ? '(none)' : entries.join(', ');
}
