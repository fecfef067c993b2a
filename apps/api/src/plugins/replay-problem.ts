import { Value } from '@sinclair/typebox/value';
import { ReplayContentTurnSchema, ReplayToolCallsTurnSchema, RUN_LIMITS } from '@tether/protocol';
import type { FastifyError } from 'fastify';

type ValidationIssue = NonNullable<FastifyError['validation']>[number];

/** What a replay turn looks like, told after each problem of one. */
const TURN_SHAPES =
  'Each turn is { "toolCalls": [{ "name": "…", "arguments": {} }], "content"?: "…" } or { "content": "final text" }.';
/** Most entries of one `children` list, and the longest `match` (as `ReplayChildrenSchema`). */
const MAX_CHILD_SCRIPTS = 64;
const MAX_MATCH_CHARS = 1_000;

/**
 * A body whose `model` failed validation while it asks for the replay
 * provider fails every branch of the model union, and Ajv's deepest problem
 * is often the profile branch's (`model.provider is not a known field`). This
 * checks the replay spec itself and returns the first problem as a sentence
 * naming the turn and the field (`body.model.script[3].toolCalls[0].name`),
 * or undefined when the issues are not about a replay model, or it finds none.
 */
export function replayScriptProblem(
  issues: readonly ValidationIssue[],
  body: unknown,
  context = 'body',
): string | undefined {
  const pointer = modelPointer(issues);
  if (pointer === undefined) return undefined;
  const model = resolve(body, pointer);
  if (!isRecord(model) || model.provider !== 'replay') return undefined;
  const at = [context, ...pointer].join('.');
  const problem = specProblem(model, at);
  return problem === undefined ? undefined : `Invalid replay script: ${problem}`;
}

/** The path of the `model` object the issues are about (its segments), if any. */
function modelPointer(issues: readonly ValidationIssue[]): string[] | undefined {
  for (const issue of issues) {
    const segments = (issue.instancePath ?? '')
      .split('/')
      .slice(1)
      .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
    // A problem of the model object itself (an unknown field) is at its path, one inside it below.
    const index = segments.indexOf('model');
    if (index >= 0) return segments.slice(0, index + 1);
  }
  return undefined;
}

function specProblem(spec: Record<string, unknown>, at: string): string | undefined {
  const extra = Object.keys(spec).find((key) => !['provider', 'script', 'children'].includes(key));
  if (extra !== undefined) {
    return `${at}.${extra} is not a known field (a replay model is { "provider": "replay", "script": [...], "children"?: [...] })`;
  }
  return scriptProblem(spec.script, `${at}.script`) ?? childrenProblem(spec.children, `${at}.children`);
}

function scriptProblem(script: unknown, at: string): string | undefined {
  if (script === undefined) return `${at} is required: the turns the model plays. ${TURN_SHAPES}`;
  if (!Array.isArray(script)) return `${at} must be an array of turns. ${TURN_SHAPES}`;
  const max = RUN_LIMITS.replayMaxTurns;
  if (script.length < 1 || script.length > max) {
    return `${at} has ${script.length} turns; a script has 1 to ${max}.`;
  }
  for (const [index, turn] of script.entries()) {
    // Checked against the variant the turn means to be, so the message says
    // what is wrong with it rather than "matches no variant".
    const schema =
      isRecord(turn) && 'toolCalls' in turn ? ReplayToolCallsTurnSchema : ReplayContentTurnSchema;
    if (Value.Check(schema, turn)) continue;
    const error = Value.Errors(schema, turn).First();
    const field = error === undefined ? '' : fieldPath(error.path);
    const why = error === undefined ? 'is invalid' : asRule(error.message);
    return `${at}[${index}]${field} (turn ${index}) ${why}. ${TURN_SHAPES}`;
  }
  return undefined;
}

function childrenProblem(children: unknown, at: string): string | undefined {
  if (children === undefined) return undefined;
  if (!Array.isArray(children) || children.length < 1 || children.length > MAX_CHILD_SCRIPTS) {
    return `${at} must be an array of 1 to ${MAX_CHILD_SCRIPTS} entries { "match"?, "script", "children"? }.`;
  }
  for (const [index, entry] of children.entries()) {
    const here = `${at}[${index}]`;
    if (!isRecord(entry)) return `${here} must be an object { "match"?, "script", "children"? }.`;
    const extra = Object.keys(entry).find((key) => !['match', 'script', 'children'].includes(key));
    if (extra !== undefined) {
      return `${here}.${extra} is not a known field (an entry is { "match"?, "script", "children"? })`;
    }
    const { match } = entry;
    if (
      match !== undefined &&
      (typeof match !== 'string' || match.length < 1 || match.length > MAX_MATCH_CHARS)
    ) {
      return `${here}.match must be a string of 1 to ${MAX_MATCH_CHARS} characters.`;
    }
    const problem =
      scriptProblem(entry.script, `${here}.script`) ?? childrenProblem(entry.children, `${here}.children`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** `/toolCalls/0/name` → `.toolCalls[0].name`. */
function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) =>
      /^\d+$/.test(part) ? `[${part}]` : `.${part.replaceAll('~1', '/').replaceAll('~0', '~')}`,
    )
    .join('');
}

/** TypeBox's message as the rest of a sentence about the field. */
function asRule(message: string): string {
  if (message === 'Unexpected property') return 'is not a known field';
  if (message === 'Expected required property') return 'is required';
  return `is wrong: ${message.charAt(0).toLowerCase()}${message.slice(1)}`;
}

function resolve(root: unknown, segments: readonly string[]): unknown {
  let value = root;
  for (const segment of segments) {
    if (!isRecord(value) && !Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
