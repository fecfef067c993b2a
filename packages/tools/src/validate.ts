import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox';
import { Value, type ValueError, ValueErrorType } from '@sinclair/typebox/value';

/** At most this many problems are listed in one message. */
const MAX_PROBLEMS = 5;

/** `/todos/0/status` -> `todos[0].status`; the root is `arguments`. */
export function fieldName(pointer: string): string {
  if (pointer === '') return 'arguments';
  let name = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    name += /^\d+$/.test(part) ? `[${part}]` : name === '' ? part : `.${part}`;
  }
  return name;
}

function preview(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A short type name for a schema, for messages: `string`, `integer >= 1`, `"a" | "b"`. */
export function describeType(schema: TSchema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as TSchema[]).map(describeType).join(' | ');
  const kind = schema[Kind];
  switch (kind) {
    case 'String':
      return 'string';
    case 'Boolean':
      return 'boolean';
    case 'Integer':
    case 'Number': {
      const base = kind === 'Integer' ? 'integer' : 'number';
      if (typeof schema.minimum === 'number') return `${base} >= ${schema.minimum}`;
      if (typeof schema.exclusiveMinimum === 'number') return `${base} > ${schema.exclusiveMinimum}`;
      return base;
    }
    case 'Array':
      return `array of ${describeType(schema.items as TSchema)}`;
    case 'Object':
      return 'object';
    default:
      return typeof kind === 'string' ? kind.toLowerCase() : 'value';
  }
}

/** `path: string, offset?: integer >= 1` for an object schema. */
export function describeParameters(schema: TSchema): string {
  const properties = schema.properties as Record<string, TSchema> | undefined;
  if (properties === undefined) return describeType(schema);
  const entries = Object.entries(properties).map(
    ([key, property]) =>
      `${key}${property[OptionalKind] === 'Optional' ? '?' : ''}: ${describeType(property)}`,
  );
  return entries.length === 0 ? '(none)' : entries.join(', ');
}

function describeError(error: ValueError): string {
  const field = `\`${fieldName(error.path)}\``;
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return `missing required field ${field}`;
    case ValueErrorType.ObjectAdditionalProperties:
      return `unknown field ${field}`;
    case ValueErrorType.Union:
      return `${field} must be ${describeType(error.schema)} (got ${preview(error.value)})`;
    case ValueErrorType.String:
    case ValueErrorType.Boolean:
    case ValueErrorType.Integer:
    case ValueErrorType.Number:
    case ValueErrorType.Array:
    case ValueErrorType.Object:
      return `${field} must be ${article(describeType(error.schema))} (got ${preview(error.value)})`;
    default:
      return `${field}: ${lowerFirst(error.message)} (got ${preview(error.value)})`;
  }
}

function article(type: string): string {
  return /^(array|object|integer)/.test(type) ? `an ${type}` : `a ${type}`;
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

/**
 * Checks `value` against `schema`. Returns `undefined` when it conforms, else
 * the problems as model-facing phrases (one per field, at most five), e.g.
 * ``missing required field `old_string` ``.
 */
export function checkArguments(schema: TSchema, value: unknown): string[] | undefined {
  if (Value.Check(schema, value)) return undefined;
  const problems: string[] = [];
  const seen = new Set<string>();
  let more = 0;
  for (const error of Value.Errors(schema, value)) {
    // TypeBox reports a missing field twice (required, then wrong type): keep the first per field.
    if (seen.has(error.path)) continue;
    seen.add(error.path);
    if (problems.length < MAX_PROBLEMS) problems.push(describeError(error));
    else more++;
  }
  if (more > 0) problems.push(`${more} more problem(s)`);
  return problems;
}
