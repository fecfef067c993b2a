/**
 * Every submission limit of `RUN_LIMITS`, entry by entry: a body at the limit
 * is accepted (202), one just past it is 400 naming the field, and docs/api.md
 * states the limit. A new entry without a case here fails the type check (the
 * table is keyed by `RUN_LIMITS`) and the first test.
 */
import { readFileSync } from 'node:fs';
import { type CreateRunBody, RUN_LIMITS } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { ACME, build, expectServing, replayRun } from './helper.js';

type Limit = keyof typeof RUN_LIMITS;

interface LimitCase {
  /** The field the 400 names, as the API writes it. */
  field: string;
  /** A body that sits at `value`. */
  body: (value: number) => Partial<CreateRunBody> & object;
  /** The value just past the limit: one above a maximum, one below a minimum. */
  past: (value: number) => number;
  /** How docs/api.md states the limit. */
  documented: (value: number) => string;
  /** The error code past it, when not `ERR_VALIDATION`; its message then names the field after a prefix. */
  code?: string;
}

const above = (value: number) => value + 1;

/** A model profile with prices, which `limits.maxCostUsd` needs. */
const PRICED = 'priced';
const PROFILES = JSON.stringify([
  { name: PRICED, provider: 'openai', model: 'm', apiKey: 'sk-x', prices: { input: 1, output: 2 } },
]);
const n = (value: number) => value.toLocaleString('en-US');

/** A relative path of exactly `length` characters whose names fit the file system (at most 100 each). */
function pathOf(length: number): string {
  let path = '';
  while (length - path.length > 100) path += `${'d'.repeat(99)}/`;
  return path + 'f'.repeat(length - path.length);
}

const CASES: Record<Limit, LimitCase> = {
  inputMaxLength: {
    field: 'body.input',
    body: (value) => replayRun(undefined, { input: 'x'.repeat(value) }),
    past: above,
    documented: (value) => `\`input\` up to ${n(value)} characters`,
  },
  maxFiles: {
    field: 'body.files',
    body: (value) =>
      replayRun(undefined, {
        files: Object.fromEntries(Array.from({ length: value }, (_, i) => [`f${i}.txt`, ''])),
      }),
    past: above,
    documented: (value) => `${n(value)} files`,
  },
  filePathMaxLength: {
    field: 'body.files',
    body: (value) => replayRun(undefined, { files: { [pathOf(value)]: 'x' } }),
    past: above,
    documented: (value) => `${n(value)}-character paths`,
  },
  clarifyTimeoutMinMs: {
    field: 'body.clarify.timeoutMs',
    body: (value) => replayRun(undefined, { clarify: { timeoutMs: value } }),
    past: (value) => value - 1,
    documented: (value) => `\`clarify.timeoutMs\` ${value / 1_000} s to`,
  },
  clarifyTimeoutMaxMs: {
    field: 'body.clarify.timeoutMs',
    body: (value) => replayRun(undefined, { clarify: { timeoutMs: value } }),
    past: above,
    documented: (value) => `to ${value / 86_400_000} days`,
  },
  maxStepsMax: {
    field: 'body.limits.maxSteps',
    body: (value) => replayRun(undefined, { limits: { maxSteps: value } }),
    past: above,
    documented: (value) => `\`limits.maxSteps\` 1 to ${n(value)}`,
  },
  maxTotalTokensMax: {
    field: 'body.limits.maxTotalTokens',
    body: (value) => replayRun(undefined, { limits: { maxTotalTokens: value } }),
    past: above,
    documented: (value) => `\`limits.maxTotalTokens\` 1 to ${n(value)}`,
  },
  maxCostUsdMax: {
    field: 'body.limits.maxCostUsd',
    // A cost needs prices: the profile of these tests has them.
    body: (value) => ({ input: 'x', model: { profile: PRICED }, limits: { maxCostUsd: value } }),
    past: above,
    documented: (value) => `\`limits.maxCostUsd\` up to $${n(value)}`,
  },
  wallClockMinMs: {
    field: 'body.limits.wallClockMs',
    body: (value) => replayRun(undefined, { limits: { wallClockMs: value } }),
    past: (value) => value - 1,
    documented: (value) => `\`limits.wallClockMs\` ${value / 1_000} s to`,
  },
  wallClockMaxMs: {
    field: 'body.limits.wallClockMs',
    body: (value) => replayRun(undefined, { limits: { wallClockMs: value } }),
    past: above,
    documented: (value) => `to ${value / 3_600_000} hours`,
  },
  replayMaxTurns: {
    field: 'body.model.script',
    body: (value) => replayRun(Array.from({ length: value }, (_, i) => ({ content: `turn ${i}` }))),
    past: above,
    documented: (value) => `${n(value)} replay turns`,
    code: 'ERR_MODEL_REPLAY_SCRIPT_INVALID',
  },
  metadataMaxKeys: {
    field: 'body.metadata',
    body: (value) =>
      replayRun(undefined, {
        metadata: Object.fromEntries(Array.from({ length: value }, (_, i) => [`k${i}`, i])),
      }),
    past: above,
    documented: (value) => `${n(value)} metadata keys`,
  },
  metadataKeyMaxLength: {
    field: 'body.metadata',
    body: (value) => replayRun(undefined, { metadata: { ['k'.repeat(value)]: 1 } }),
    past: above,
    documented: (value) => `metadata keys of up to ${n(value)} characters`,
  },
  maxClientTools: {
    field: 'body.tools',
    body: (value) =>
      replayRun(undefined, {
        tools: Array.from({ length: value }, (_, i) => ({
          name: `t${i}`,
          description: '',
          parameters: { type: 'object' },
        })),
      }),
    past: above,
    documented: (value) => `${n(value)} client tools`,
  },
  clientToolDescriptionMaxLength: {
    field: 'body.tools.0.description',
    body: (value) =>
      replayRun(undefined, {
        tools: [{ name: 't', description: 'd'.repeat(value), parameters: { type: 'object' } }],
      }),
    past: above,
    documented: (value) => `tool descriptions of up to ${n(value)} characters`,
  },
  toolTimeoutMinMs: {
    field: 'body.toolTimeoutMs',
    body: (value) => replayRun(undefined, { toolTimeoutMs: value }),
    past: (value) => value - 1,
    documented: (value) => `\`toolTimeoutMs\` ${value / 1_000} s to`,
  },
  toolTimeoutMaxMs: {
    field: 'body.toolTimeoutMs',
    body: (value) => replayRun(undefined, { toolTimeoutMs: value }),
    past: above,
    documented: (value) => `to ${value / 86_400_000} days (default 10 minutes)`,
  },
  outputMaxAttemptsMax: {
    field: 'body.output.maxAttempts',
    body: (value) => replayRun(undefined, { output: { schema: { type: 'object' }, maxAttempts: value } }),
    past: above,
    documented: (value) => `\`output.maxAttempts\` 1 to ${n(value)} (default 3)`,
  },
  scheduleMaxMs: {
    field: 'body.delayMs',
    body: (value) => replayRun(undefined, { delayMs: value }),
    past: above,
    documented: (value) => `\`runAt\` or \`delayMs\` at most ${value / 86_400_000} days ahead`,
  },
  expiryMinMs: {
    field: 'body.ttlMs',
    body: (value) => replayRun(undefined, { ttlMs: value }),
    past: (value) => value - 1,
    documented: (value) => `\`expiresAt\` or \`ttlMs\` at least ${value / 1_000} s`,
  },
  expiryMaxMs: {
    field: 'body.ttlMs',
    body: (value) => replayRun(undefined, { ttlMs: value }),
    past: above,
    documented: (value) => `and at most ${value / 86_400_000} days ahead`,
  },
};

const limits = Object.entries(RUN_LIMITS) as [Limit, number][];

describe('RUN_LIMITS', () => {
  it('has a case here for every entry', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(RUN_LIMITS).sort());
  });

  it('are all stated in docs/api.md', () => {
    const doc = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
    const paragraph = /^- \*\*Submission limits\*\*[\s\S]*?(?=\n- |\n\n)/m.exec(doc)?.[0] ?? '';
    const text = paragraph.replace(/\s+/g, ' ');
    expect(text).not.toBe('');
    for (const [name, value] of limits) expect(text, name).toContain(CASES[name].documented(value));
  });

  it('refuses a budget in money for a model without prices, naming the field', async () => {
    const { app } = await build({ env: { TETHER_MODEL_PROFILES: PROFILES } });
    const unpriced = JSON.stringify([{ name: 'plain', provider: 'openai', model: 'm', apiKey: 'sk-x' }]);
    const { app: other } = await build({ env: { TETHER_MODEL_PROFILES: unpriced } });
    for (const [server, model] of [
      [app, replayRun().model],
      [other, { profile: 'plain' }],
    ] as const) {
      const response = await server.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: ACME,
        payload: { input: 'x', model, limits: { maxCostUsd: 1 } },
      });
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json()).toMatchObject({ error: { code: 'ERR_VALIDATION' } });
      expect(response.json<{ error: { message: string } }>().error.message).toMatch(
        /^body\.limits\.maxCostUsd needs a model whose profile has prices/,
      );
      await expectServing(server);
    }
  });

  it.each(limits)(
    '%s (%i): accepted at the limit, 400 naming the field just past it',
    async (name, value) => {
      const { app } = await build({ env: { TETHER_MODEL_PROFILES: PROFILES } });
      const submit = (body: object) =>
        app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: body });
      const { field, body, past, code } = CASES[name];
      const at = await submit(body(value));
      expect(at.statusCode, at.body).toBe(202);
      const refused = await submit(body(past(value)));
      expect(refused.statusCode, refused.body).toBe(400);
      const { error } = refused.json<{ error: { code: string; message: string } }>();
      expect(error.code).toBe(code ?? 'ERR_VALIDATION');
      if (code === undefined) expect(error.message.startsWith(`${field} `), error.message).toBe(true);
      else expect(error.message, error.message).toContain(`: ${field} `);
      // The accepted run is there, the refused one is not.
      expect(await expectServing(app)).toEqual([at.json<{ id: string }>().id]);
    },
  );
});
