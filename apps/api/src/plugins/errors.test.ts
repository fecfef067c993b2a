import { CreateRunBodySchema } from '@tether/protocol';
import { Ajv } from 'ajv';
import type { FastifyError } from 'fastify';
import { describe, expect, it } from 'vitest';
import { describeValidation, mainIssue } from './errors.js';

type Issues = NonNullable<FastifyError['validation']>;

// As the API validates bodies: the first problem of each union branch only.
const validate = new Ajv({ allErrors: false, strict: false, coerceTypes: false }).compile(
  CreateRunBodySchema,
);

function messageFor(body: unknown): string {
  expect(validate(body)).toBe(false);
  return describeValidation(mainIssue(validate.errors as Issues), 'body');
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
    [{ input: 'x', model: { profile: 'a b' } }, 'body.model.profile must match pattern'],
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
