import { CreateRunBodySchema } from '@tether/protocol';
import { Ajv } from 'ajv';
import type { FastifyError } from 'fastify';
import { describe, expect, it } from 'vitest';
import { describeValidation, mainIssue } from './errors.js';

type Issues = NonNullable<FastifyError['validation']>;

// As the API validates bodies: the first problem of each union branch only.
const validate = new Ajv({ allErrors: false, strict: false, coerceTypes: false, verbose: true }).compile(
  CreateRunBodySchema,
);

function messageFor(body: unknown): string {
  expect(validate(body)).toBe(false);
  return describeValidation(mainIssue(validate.errors as Issues), 'body', validate.errors as Issues);
}

describe('the validation message', () => {
  it.each([
    [{ input: 'x', colour: 'blue' }, 'body.colour is not a known field'],
    [{ input: 'x', limits: { maxSteps: 0 } }, 'body.limits.maxSteps must be >= 1'],
    // Unions: the branch that got deepest is the one the client meant.
    [
      { input: 'x', model: { provider: 'replay', script: Array(1_001).fill({ content: 'x' }) } },
      'body.model.script must NOT have more than 1000 items',
    ],
    [
      { input: 'x', model: { provider: 'replay', script: [{ content: 'x'.repeat(100_001) }] } },
      'body.model.script.0.content must NOT have more than 100000 characters',
    ],
    [{ input: 'x', model: { profile: 'a b' } }, 'body.model.profile is not a model profile name'],
    // A union of literals lists its values.
    [{ input: 'x', locale: 'fr' }, 'body.locale must be one of "zh", "en"'],
    [{ input: 'x', locale: 3 }, 'body.locale must be one of "zh", "en"'],
    // Keys: named, and cut.
    [
      { input: 'x', metadata: { ['k'.repeat(129)]: 1 } },
      `body.metadata key "${'k'.repeat(40)}…" must NOT have more than 128 characters`,
    ],
    [{ input: 'x', files: { '': 'x' } }, 'body.files key "" must NOT have fewer than 1 characters'],
  ])('%j → %s', (body, message) => {
    expect(messageFor(body)).toContain(message);
  });
});

describe('a value outside the allowed ones', () => {
  const ajv = new Ajv({ allErrors: false, strict: false, verbose: true });
  const messageOf = (schema: object, value: unknown) => {
    const check = ajv.compile(schema);
    expect(check(value)).toBe(false);
    const issues = check.errors as Issues;
    return describeValidation(mainIssue(issues), 'body', issues);
  };

  it('lists the values of a union of literals, an enum, and says the one of a lone literal', () => {
    const strategy = {
      type: 'object',
      properties: {
        multitask: { anyOf: [{ const: 'enqueue' }, { const: 'reject' }, { const: 'interrupt' }] },
      },
    };
    expect(messageOf(strategy, { multitask: 'sometimes' })).toBe(
      'body.multitask must be one of "enqueue", "reject", "interrupt"',
    );
    const level = { type: 'object', properties: { level: { enum: ['low', 'high'] } } };
    expect(messageOf(level, { level: 'mid' })).toBe('body.level must be one of "low", "high"');
    const ok = { type: 'object', properties: { ok: { const: true } } };
    expect(messageOf(ok, { ok: false })).toBe('body.ok must be true');
  });

  it("lists a nested union's values with its parent's, and no other field's", () => {
    const schema = {
      type: 'object',
      properties: {
        a: { anyOf: [{ const: 'x' }, { const: 'y' }] },
        b: { anyOf: [{ const: 1 }, { anyOf: [{ const: 2 }, { const: 3 }] }] },
      },
    };
    expect(messageOf(schema, { a: 'x', b: 4 })).toBe('body.b must be one of 1, 2, 3');
    // TypeBox's literals carry their type: a value of another type is told the values too.
    const typed = {
      type: 'object',
      properties: {
        c: {
          anyOf: [
            { type: 'string', const: 'a' },
            { type: 'string', const: 'b' },
          ],
        },
      },
    };
    expect(messageOf(typed, { c: 7 })).toBe('body.c must be one of "a", "b"');
    // A union with a branch that is more than a literal says the deepest problem, as before.
    const mixed = { type: 'object', properties: { d: { anyOf: [{ const: 'a' }, { type: 'integer' }] } } };
    expect(messageOf(mixed, { d: 'b' })).toBe('body.d must be "a"');
  });
});
