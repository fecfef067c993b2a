/**
 * A tenant's budgets end to end, over real ports: an API process, two worker processes, a fake
 * OpenAI-compatible model reporting usage, and a webhook receiver of the test's. Fifty runs of one
 * tenant at once reach its daily token budget: every turn is in the ledger exactly once (the sum
 * of the runs' `usage` is what `GET /v1/usage` reports), the running runs stop at a turn boundary
 * with `ERR_TENANT_BUDGET_EXCEEDED`, new submissions are 402, and `budget.warning` reaches the
 * receiver once.
 */
import { randomBytes } from 'node:crypto';
import type { Run, RunEvent, UsageReport } from '@tether/protocol';
import { type FakeOpenAIServer, startFakeOpenAI, streamToolCalls } from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ACME, API_KEYS, BETA } from './helper.js';
import {
  call,
  deployment,
  eventually,
  startApi,
  startWorker,
  stopAll,
  webhookReceiver,
} from './processes.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const RUNS = 50;
/** Each turn: 80 tokens in, 20 out. */
const TURN_TOKENS = 100;
/** Enough for every run's first turn and a few of their second. */
const DAY_TOKENS = 6_000;

/** Turns that each call `todo`, priced by the profile, more than any run gets to take. */
async function model(): Promise<FakeOpenAIServer> {
  const fake = await startFakeOpenAI();
  cleanups.push(() => fake.close());
  for (let i = 0; i < RUNS * 6; i++) {
    const turn = streamToolCalls([{ name: 'todo', arguments: JSON.stringify({ todos: [] }) }]);
    if (turn.kind === 'stream') turn.usage = { prompt_tokens: 80, completion_tokens: 20 };
    fake.enqueue(turn);
  }
  return fake;
}

/** Every event of a run, as a JSON page. */
async function eventsOf(base: string, runId: string): Promise<RunEvent[]> {
  const page = await call<{ data: RunEvent[] }>(
    base,
    'GET',
    `/v1/runs/${runId}/events?limit=1000`,
    undefined,
    {
      ...ACME,
      accept: 'application/json',
    },
  );
  return page.body.data;
}

describe('tenant budgets end to end', () => {
  it(`counts ${RUNS} runs' turns exactly, stops them at the budget, refuses more and warns once`, async () => {
    const fake = await model();
    const profiles = JSON.stringify([
      {
        name: 'priced',
        provider: 'openai',
        baseURL: fake.baseURL,
        model: 'm',
        apiKey: 'sk-fake',
        prices: { input: 3, output: 15 },
      },
    ]);
    const env = {
      TETHER_MODEL_PROFILES: profiles,
      TETHER_SECRETS_KEY: randomBytes(32).toString('base64'),
      TETHER_WEBHOOK_ALLOW_HTTP: '1',
      TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
    };
    const shared = await deployment('tenant-budgets');
    const api = await startApi(shared, API_KEYS, 'api', env);
    const workerEnv = { ...env, TETHER_PUBLIC_URL: api.base };
    await Promise.all([
      startWorker(shared, 'worker-1', 25, workerEnv),
      startWorker(shared, 'worker-2', 25, workerEnv),
    ]);
    const hook = await webhookReceiver();
    cleanups.push(hook.close);
    expect(
      (await call(api.base, 'POST', '/v1/webhooks', { url: hook.url, events: ['budget.warning'] })).status,
    ).toBe(201);
    const set = await call(api.base, 'PUT', '/v1/budgets', {
      day: { tokens: DAY_TOKENS },
      month: { usd: 1_000 },
    });
    expect(set.status).toBe(200);

    const body = (i: number) => ({
      input: `spend ${i}`,
      model: { profile: 'priced' },
      toolsets: ['planning'],
      metadata: { batch: 'b1' },
    });
    const submitted = await Promise.all(
      Array.from({ length: RUNS }, async (_, i) => {
        const response = await call<{ id: string }>(api.base, 'POST', '/v1/runs', body(i));
        expect(response.status).toBe(202);
        return response.body.id;
      }),
    );
    const runs = await eventually(
      () =>
        Promise.all(submitted.map(async (id) => (await call<Run>(api.base, 'GET', `/v1/runs/${id}`)).body)),
      (all) => all.every((run) => ['completed', 'failed', 'cancelled'].includes(run.status)),
    );

    // Every run stopped on the budget, at a turn boundary: each call it made has its result.
    for (const run of runs) {
      expect(run).toMatchObject({ status: 'failed', error: { code: 'ERR_TENANT_BUDGET_EXCEEDED' } });
      expect(run.error?.message).toContain('(day.tokens)');
      const events = await eventsOf(api.base, run.id);
      const calls = events.filter((e) => e.type === 'tool.call').length;
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(events.filter((e) => e.type === 'tool.result')).toHaveLength(calls);
      expect(run.usage?.totalTokens).toBe(calls * TURN_TOKENS);
    }

    // The ledger holds every turn once: the runs' usage, summed, to the token and the micro-dollar.
    const sum = (pick: (run: Run) => number) => runs.reduce((total, run) => total + pick(run), 0);
    const report = (await call<UsageReport>(api.base, 'GET', '/v1/usage?groupBy=metadata.batch')).body;
    expect(report.totals).toMatchObject({
      inputTokens: sum((run) => run.usage?.inputTokens ?? 0),
      outputTokens: sum((run) => run.usage?.outputTokens ?? 0),
      totalTokens: sum((run) => run.usage?.totalTokens ?? 0),
      runs: RUNS,
    });
    expect(Math.round(report.totals.costUsd * 1e6)).toBe(
      sum((run) => Math.round((run.usage?.costUsd ?? 0) * 1e6)),
    );
    expect(report.totals.totalTokens).toBeGreaterThanOrEqual(DAY_TOKENS);
    expect(report.rows).toEqual([{ key: 'b1', ...report.totals }]);
    // The model was asked exactly the turns the runs took.
    expect(fake.requests).toHaveLength(report.totals.totalTokens / TURN_TOKENS);

    // Over the budget: a new submission is refused; another tenant's is not, and sees nothing of it.
    const refused = await call<{ error: { code: string; message: string } }>(
      api.base,
      'POST',
      '/v1/runs',
      body(0),
    );
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('ERR_TENANT_BUDGET_EXCEEDED');
    expect(
      (await call<UsageReport>(api.base, 'GET', '/v1/usage', undefined, BETA)).body.totals.totalTokens,
    ).toBe(0);

    // One warning, in the log of the run whose turn crossed 80%, delivered once.
    const warnings = (
      await Promise.all(
        runs.map(async (run) =>
          (await eventsOf(api.base, run.id)).filter((e) => e.type === 'budget.warning'),
        ),
      )
    ).flat();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.data).toMatchObject({
      period: 'day',
      unit: 'tokens',
      limit: DAY_TOKENS,
      percent: expect.any(Number),
    });
    const warned = warnings[0]?.data as { used: number; percent: number };
    expect(warned.used).toBeGreaterThanOrEqual(DAY_TOKENS * 0.8);
    await eventually(
      async () => hook.received.length,
      (count) => count >= 1,
    );
    expect(hook.received.map((payload) => payload.type)).toEqual(['budget.warning']);
    expect(hook.received[0]?.data).toEqual(warnings[0]?.data);
  });
});
