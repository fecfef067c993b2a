import { randomBytes } from 'node:crypto';
import { newId } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { ACME, answerTokenOf, BETA, build, submit, suspend } from './helper.js';

/**
 * A webhook's answer token on `POST /v1/runs/:id/clarify/:requestId`: a token that is not the
 * question's own answers one 401 whatever exists (the run, the question, another tenant's), takes
 * no longer to refuse for a run or question that exists, and counts as a failed authentication.
 */
const SECRETS_KEY = randomBytes(32).toString('base64');

type Failure = { error: { code: string; message: string } };

/** A made-up token of the right shape. */
const madeUp = () => `wat_${randomBytes(32).toString('base64url')}`;

/**
 * Two tenants, each with a run waiting on a question whose `clarify.requested` delivery carries an
 * answer token; `env` is added to the app's.
 */
async function setUp(env: Record<string, string> = {}) {
  const { app, config } = await build({ env: { TETHER_SECRETS_KEY: SECRETS_KEY, ...env } });
  const runs = [];
  for (const [headers, tenant] of [
    [ACME, 'acme'],
    [BETA, 'beta'],
  ] as const) {
    const hook = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers,
      payload: { url: 'https://hooks.example.com/tether', events: ['clarify.requested'] },
    });
    expect(hook.statusCode).toBe(201);
    const id = await submit(app, headers);
    const requestId = await suspend(app, id);
    runs.push({
      id,
      requestId,
      path: `/v1/runs/${id}/clarify/${requestId}`,
      token: await answerTokenOf(app, config, tenant, id),
    });
  }
  const [acme, beta] = runs as [(typeof runs)[0], (typeof runs)[0]];
  const answer = (path: string, token: string, remoteAddress = '127.0.0.1') =>
    app.inject({
      method: 'POST',
      url: path,
      headers: { authorization: `Bearer ${token}` },
      payload: { answer: 'a' },
      remoteAddress,
    });
  return { app, acme, beta, answer };
}

describe('answer tokens', () => {
  it('answers every token that is not the question’s own alike, whether the run and the question exist', async () => {
    const { app, acme, beta, answer } = await setUp();
    const unknownQuestion = `/v1/runs/${acme.id}/clarify/${newId('clr')}`;
    const unknownRun = `/v1/runs/${newId('run')}/clarify/${newId('clr')}`;
    const cases: [string, string, string][] = [
      ['made up, real run and question', acme.path, madeUp()],
      ["another tenant's question's token", acme.path, beta.token],
      ['made up, real run, unknown question', unknownQuestion, madeUp()],
      ["a real token, its run's unknown question", unknownQuestion, acme.token],
      ['made up, unknown run', unknownRun, madeUp()],
      ['a real token, unknown run', unknownRun, acme.token],
      ['made up, in ?token=', `${acme.path}?token=${madeUp()}`, ''],
      ['not even the shape of a token', acme.path, 'wat_x'],
    ];
    const answers = [];
    const bodies = new Set<string>();
    for (const [name, path, token] of cases) {
      const response = token
        ? await answer(path, token)
        : await app.inject({ method: 'POST', url: path, payload: { answer: 'a' } });
      const { error } = response.json<Failure>();
      answers.push([name, response.statusCode, error.code, response.headers['www-authenticate']]);
      bodies.add(response.body);
    }
    expect(answers).toEqual(cases.map(([name]) => [name, 401, 'ERR_ANSWER_TOKEN_INVALID', 'Bearer']));
    // Nothing in the body tells the cases apart.
    expect(bodies.size).toBe(1);
    // Neither question was touched: each still takes its own token, once.
    for (const run of [acme, beta]) {
      const ok = await answer(run.path, run.token);
      expect([ok.statusCode, ok.json()]).toEqual([200, { ok: true }]);
    }
    expect((await answer(acme.path, acme.token)).json<Failure>().error.code).toBe('ERR_ANSWER_TOKEN_USED');
  });

  it('counts every refused token toward the failed-authentication limit of the address', async () => {
    const { app, acme, beta, answer } = await setUp({
      // Windows are aligned to the clock: an hour's makes a window change during the test unlikely.
      TETHER_AUTH_FAIL_LIMIT: '3',
      TETHER_AUTH_FAIL_WINDOW_MS: '3600000',
    });
    const from = '10.0.0.1';
    const refused = [
      await answer(acme.path, madeUp(), from),
      await answer(`/v1/runs/${acme.id}/clarify/${newId('clr')}`, madeUp(), from),
      await answer(`/v1/runs/${newId('run')}/clarify/${newId('clr')}`, beta.token, from),
    ];
    expect(refused.map((r) => r.statusCode)).toEqual([401, 401, 401]);
    // The fourth failure passes the limit: 429, and from then on the address is refused whatever
    // it sends, its question's own token and an API key included, while the question waits.
    const limited = [
      await answer(acme.path, madeUp(), from),
      await answer(acme.path, acme.token, from),
      await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME, remoteAddress: from }),
    ];
    for (const response of limited) {
      expect([response.statusCode, response.json<Failure>().error.code]).toEqual([
        429,
        'ERR_AUTH_RATE_LIMITED',
      ]);
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect((await app.store.get(acme.id))?.status).toBe('waiting_for_input');
    // Another address has its own count: the token answers from there.
    expect((await answer(acme.path, acme.token, '10.0.0.2')).statusCode).toBe(200);
  });

  it('takes as long to refuse a valid token of another question as a made-up one (1,000 tries each)', async () => {
    // Limits no test reaches: every try is a failed authentication, and a request of no tenant.
    const { acme, beta, answer } = await setUp({
      TETHER_AUTH_FAIL_LIMIT: '1000000',
      TETHER_RATE_LIMIT_MAX: '1000000',
    });
    const unknownQuestion = `/v1/runs/${acme.id}/clarify/${newId('clr')}`;
    const unknownRun = `/v1/runs/${newId('run')}/clarify/${newId('clr')}`;
    const made = madeUp();
    const cases = {
      /** A valid token (another tenant's question's), at a run and a question that exist. */
      valid: () => answer(acme.path, beta.token),
      madeUp: () => answer(acme.path, made),
      unknownQuestion: () => answer(unknownQuestion, made),
      unknownRun: () => answer(unknownRun, made),
    };
    const names = Object.keys(cases) as (keyof typeof cases)[];
    const times = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
      keyof typeof cases,
      number[]
    >;
    const statuses = new Set<number>();
    const TRIES = 1_000;
    const WARM_UP = 50;
    for (let round = 0; round < WARM_UP + TRIES; round++) {
      // Interleaved, in a new order each round: a spell of load falls on the cases of a round alike.
      for (const name of shuffled(names)) {
        const started = process.hrtime.bigint();
        const response = await cases[name]();
        const took = Number(process.hrtime.bigint() - started);
        statuses.add(response.statusCode);
        if (round >= WARM_UP) times[name].push(took);
      }
    }
    // Each case against the valid token, round by round: the median of the differences. Load and
    // pauses fall on either side at random, and leave it near zero (within 2% of a try on a loaded
    // two-core machine); one Redis round trip more or less (reading the run before the token, as
    // the answer once did) moves it by a quarter of a try or more.
    const bound = median(times.valid) * 0.05;
    for (const name of ['madeUp', 'unknownQuestion', 'unknownRun'] as const) {
      const differences = times[name].map((took, i) => took - (times.valid[i] as number));
      const shift = median(differences);
      expect(
        Math.abs(shift),
        `${name} - valid: ${Math.round(shift / 1_000)} µs (a try: ${Math.round(median(times.valid) / 1_000)} µs)`,
      ).toBeLessThan(bound);
    }
    expect([...statuses]).toEqual([401]);
    // 4,200 requests: seconds on an idle machine, more than a minute beside CPU-bound processes.
  }, 180_000);
});

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
