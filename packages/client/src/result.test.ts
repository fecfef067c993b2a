/**
 * Structured results through the SDK: `runs.runToCompletion` sends `output` (a TypeBox schema as
 * the JSON Schema it is), resolves with the run's `result`, and types it: `Static<S>` of a TypeBox
 * schema, the type parameter for a plain JSON Schema, `unknown` otherwise (checked by tsc).
 */
import { type Static, Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import { TetherClient } from './client.js';
import { FakeApi } from './testing/fake-api.js';

let api: FakeApi;
let client: TetherClient;

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  await api.start();
  client = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: false });
});

afterEach(async () => {
  await api.close();
});

const Verdict = Type.Object({
  verdict: Type.Union([Type.Literal('pass'), Type.Literal('fail')]),
  score: Type.Integer(),
});

/** Each submitted run completes with `result`. */
function completeWith(result: unknown): void {
  api.onSubmit = (run) => api.append(run.run.id, 'run.completed', { output: 'judged', result });
}

describe('runs.runToCompletion with output', () => {
  it('sends a TypeBox schema as plain JSON Schema and types the result as its Static', async () => {
    completeWith({ verdict: 'pass', score: 9 });
    const run = await client.runs.runToCompletion({
      input: 'judge',
      output: { schema: Verdict, maxAttempts: 2 },
    });
    expectTypeOf(run.result).toEqualTypeOf<Static<typeof Verdict> | undefined>();
    expect(run.result).toEqual({ verdict: 'pass', score: 9 });
    expect(run.result?.verdict).toBe('pass');
    expect(api.requests[0]?.body).toEqual({
      input: 'judge',
      output: {
        schema: {
          type: 'object',
          properties: {
            verdict: {
              anyOf: [
                { const: 'pass', type: 'string' },
                { const: 'fail', type: 'string' },
              ],
            },
            score: { type: 'integer' },
          },
          required: ['verdict', 'score'],
        },
        maxAttempts: 2,
      },
    });
  });

  it('types the result of a plain JSON Schema by the type parameter, else as unknown', async () => {
    completeWith({ city: 'Oslo' });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const typed = await client.runs.runToCompletion<{ city: string }>({ input: 'where', output: { schema } });
    expectTypeOf(typed.result).toEqualTypeOf<{ city: string } | undefined>();
    expect(typed.result?.city).toBe('Oslo');
    const untyped = await client.runs.runToCompletion({ input: 'where', output: { schema } });
    expectTypeOf(untyped.result).toEqualTypeOf<unknown>();
    expect(untyped.result).toEqual({ city: 'Oslo' });
  });

  it('leaves result out of a run without output', async () => {
    api.onSubmit = (run) => api.append(run.run.id, 'run.completed', { output: 'done' });
    const run = await client.runs.runToCompletion({ input: 'plain' });
    expect(run).toMatchObject({ status: 'completed', output: 'done' });
    expect(run).not.toHaveProperty('result');
  });
});
