/**
 * `/v1/budgets` and `/v1/usage`: a tenant's budgets set, read and removed, the operator's default
 * (`TETHER_TENANT_BUDGETS`) and the tenant's own value over it; a tenant over a budget refused
 * with 402 on every submit path (REST, a retry, a session's message, the WebSocket gateway); the
 * usage report's range and groupings; tenancy, API keys only, bad input and the server's health.
 * The ledger is written as the workers write it (`UsageLedger.record`).
 */
import type { TenantBudgetsView, UsageReport } from '@tether/protocol';
import { utcDay } from '@tether/store/budgets';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, endRun, expectServing, replayRun, submit } from './helper.js';
import { listening, ofType, socket } from './ws-harness.js';

const call = (
  app: FastifyInstance,
  method: 'GET' | 'PUT' | 'DELETE',
  headers: Record<string, string> = ACME,
  payload?: unknown,
) =>
  app.inject({
    method,
    url: '/v1/budgets',
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

const usage = (app: FastifyInstance, query = '', headers: Record<string, string> = ACME) =>
  app.inject({ method: 'GET', url: `/v1/usage${query}`, headers });

/** A turn of `tokens` (and `micros`) added to the tenant's ledger, now, as a worker adds it. */
const spend = (app: FastifyInstance, tenant: string, tokens: number, extra: object = {}) =>
  app.usage.record(tenant, {
    inputTokens: tokens - Math.floor(tokens / 4),
    outputTokens: Math.floor(tokens / 4),
    totalTokens: tokens,
    micros: tokens * 10,
    firstTurn: true,
    ...extra,
  });

const errorOf = (response: { json: <T>() => T }) =>
  response.json<{ error: { code: string; message: string } }>().error;

const tomorrow = () => `${utcDay(Date.now() + 86_400_000)}T00:00:00.000Z`;

describe('/v1/budgets', () => {
  it('is set, read and removed per tenant, with what the tenant used today and this month', async () => {
    const { app } = await build();
    const none = (await call(app, 'GET')).json<TenantBudgetsView>();
    expect(none).toMatchObject({ budgets: null, source: null, updatedAt: null });
    expect(none.used.day).toEqual({ tokens: 0, usd: 0, resetsAt: tomorrow() });

    const set = await call(app, 'PUT', ACME, { day: { tokens: 1_000 }, month: { usd: 2.5, tokens: 50_000 } });
    expect(set.statusCode, set.body).toBe(200);
    const view = set.json<TenantBudgetsView>();
    expect(view).toMatchObject({
      budgets: { day: { tokens: 1_000 }, month: { usd: 2.5, tokens: 50_000 } },
      source: 'api',
    });
    expect(Date.parse(view.updatedAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    await spend(app, 'acme', 400);
    const read = (await call(app, 'GET')).json<TenantBudgetsView>();
    expect(read.used.day).toMatchObject({ tokens: 400, usd: 0.004 });
    expect(read.used.month).toMatchObject({ tokens: 400, usd: 0.004 });
    // Another tenant sees nothing of it: neither the budgets nor the use.
    const beta = (await call(app, 'GET', BETA)).json<TenantBudgetsView>();
    expect(beta).toMatchObject({
      budgets: null,
      source: null,
      used: { day: { tokens: 0 }, month: { tokens: 0 } },
    });
    expect((await call(app, 'DELETE', BETA)).statusCode).toBe(204);
    expect((await call(app, 'GET')).json<TenantBudgetsView>().budgets).toEqual(view.budgets);

    expect((await call(app, 'DELETE')).statusCode).toBe(204);
    expect((await call(app, 'GET')).json<TenantBudgetsView>()).toMatchObject({ budgets: null, source: null });
    expect((await call(app, 'DELETE')).statusCode).toBe(204);
  });

  it.each([
    [{}, 'body must NOT have fewer than 1 properties'],
    [{ week: { tokens: 5 } }, 'week'],
    [{ day: {} }, 'body.day'],
    [{ day: { tokens: 0 } }, 'body.day.tokens'],
    [{ day: { tokens: 1.5 } }, 'body.day.tokens'],
    [{ day: { tokens: '5' } }, 'body.day.tokens'],
    [{ month: { usd: -1 } }, 'body.month.usd'],
    [{ month: { usd: 0 } }, 'body.month.usd'],
    [{ month: { usd: 5, eur: 5 } }, 'eur'],
  ])('refuses %j with 400 naming the field, keeping the budgets before', async (body, field) => {
    const { app } = await build();
    expect((await call(app, 'PUT', ACME, { day: { tokens: 10 } })).statusCode).toBe(200);
    const refused = await call(app, 'PUT', ACME, body);
    expect(refused.statusCode, refused.body).toBe(400);
    expect(errorOf(refused)).toMatchObject({ code: 'ERR_VALIDATION' });
    expect(errorOf(refused).message).toContain(field);
    expect((await call(app, 'GET')).json<TenantBudgetsView>().budgets).toEqual({ day: { tokens: 10 } });
    await expectServing(app);
  });

  it('takes API keys only: a read token or a session token is refused, and changes nothing', async () => {
    const { app } = await build();
    expect((await call(app, 'PUT', ACME, { day: { tokens: 5 } })).statusCode).toBe(200);
    const accepted = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(),
    });
    const readToken = accepted.json<{ token: string }>().token;
    const session = await app.inject({ method: 'POST', url: '/v1/sessions', headers: ACME, payload: {} });
    const sessionToken = session.json<{ token: string }>().token;
    for (const [method, url] of [
      ['GET', '/v1/budgets'],
      ['PUT', '/v1/budgets'],
      ['DELETE', '/v1/budgets'],
      ['GET', '/v1/usage'],
    ] as const) {
      const payload = method === 'PUT' ? { payload: { day: { tokens: 1 } } } : {};
      for (const attempt of [
        { url: `${url}?token=${readToken}` },
        { url: `${url}?token=${sessionToken}` },
        { url, headers: { authorization: `Bearer ${sessionToken}` } },
      ]) {
        const response = await app.inject({ method, ...attempt, ...payload });
        // 401, or 400 for a query the route does not take (`token`): never an answer.
        expect([400, 401], `${method} ${attempt.url}`).toContain(response.statusCode);
      }
    }
    expect((await call(app, 'GET')).json<TenantBudgetsView>().budgets).toEqual({ day: { tokens: 5 } });
    expect((await usage(app)).statusCode).toBe(200);
  });

  it("gives a tenant the operator's default until it sets its own, and again once removed", async () => {
    const { app } = await build({
      env: { TETHER_TENANT_BUDGETS: JSON.stringify({ acme: { day: { tokens: 100 } } }) },
    });
    expect((await call(app, 'GET')).json<TenantBudgetsView>()).toMatchObject({
      budgets: { day: { tokens: 100 } },
      source: 'env',
      updatedAt: null,
    });
    expect((await call(app, 'GET', BETA)).json<TenantBudgetsView>().source).toBeNull();
    await spend(app, 'acme', 150);
    // Over the default: refused. The tenant's own budget replaces the default as a whole.
    expect(
      (await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: replayRun() })).statusCode,
    ).toBe(402);
    await call(app, 'PUT', ACME, { day: { tokens: 1_000 } });
    expect((await call(app, 'GET')).json<TenantBudgetsView>()).toMatchObject({
      budgets: { day: { tokens: 1_000 } },
      source: 'api',
    });
    await submit(app, ACME);
    await call(app, 'DELETE');
    expect((await call(app, 'GET')).json<TenantBudgetsView>().source).toBe('env');
    expect(
      (await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: replayRun() })).statusCode,
    ).toBe(402);
    // Another tenant, with no default, submits as before.
    await submit(app, BETA);
  });
});

describe('a tenant over its budget', () => {
  it('is refused with 402 on every submit path, naming the budget and when it resets', async () => {
    const { app, base } = await listening();
    await call(app, 'PUT', ACME, { day: { usd: 0.05 }, month: { tokens: 10_000 } });
    const failed = await submit(app, ACME);
    await app.store.claim(failed, 'test-worker:1', 1, 'test-worker');
    await endRun(app, failed, { status: 'failed', error: { code: 'ERR_X', message: 'x' } }, 'test-worker:1');
    const session = (
      await app.inject({ method: 'POST', url: '/v1/sessions', headers: ACME, payload: {} })
    ).json<{ id: string }>().id;
    const before = await expectServing(app);
    await spend(app, 'acme', 5_000); // $0.05: the day's money used up, half the month's tokens

    const refusals = [
      await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: replayRun() }),
      await app.inject({ method: 'POST', url: `/v1/runs/${failed}/retry`, headers: ACME }),
      await app.inject({
        method: 'POST',
        url: `/v1/sessions/${session}/runs`,
        headers: ACME,
        payload: replayRun(),
      }),
    ];
    for (const refused of refusals) {
      expect(refused.statusCode, refused.body).toBe(402);
      expect(errorOf(refused).code).toBe('ERR_TENANT_BUDGET_EXCEEDED');
      expect(errorOf(refused).message).toContain('(day.usd)');
      expect(errorOf(refused).message).toContain(`resets at ${tomorrow()}`);
    }
    const ws = await socket(base);
    ws.send({
      type: 'message',
      sessionId: session,
      content: 'hello',
      options: { model: { provider: 'replay', script: [{ content: 'ok' }] } },
    });
    const frame = await ws.waitFor(ofType('error'));
    expect(frame).toMatchObject({ type: 'error', code: 'ERR_TENANT_BUDGET_EXCEEDED' });
    expect(frame.type === 'error' && frame.message).toContain('(day.usd)');
    expect(await expectServing(app)).toEqual(before);
    // Another tenant submits as before.
    await submit(app, BETA);

    // A higher budget lets the tenant submit again, at once (the change is published).
    await call(app, 'PUT', ACME, { day: { usd: 1 }, month: { tokens: 10_000 } });
    await submit(app, ACME);
    await spend(app, 'acme', 5_000);
    const month = await app.inject({ method: 'POST', url: '/v1/runs', headers: ACME, payload: replayRun() });
    expect(month.statusCode).toBe(402);
    expect(errorOf(month).message).toContain('(month.tokens): 10000 of 10000');
  });
});

describe('/v1/usage', () => {
  it("reports the tenant's usage over the last 30 days by default, by day, model, profile and metadata", async () => {
    const { app } = await build();
    await spend(app, 'acme', 100, { profile: 'fast', model: 'gpt-mini', metadata: [['team', 'blue']] });
    await spend(app, 'acme', 40, {
      profile: 'smart',
      model: 'gpt-big',
      metadata: [['team', 'red']],
      firstTurn: false,
    });
    await spend(app, 'beta', 7);
    const byDay = await usage(app);
    expect(byDay.statusCode, byDay.body).toBe(200);
    const report = byDay.json<UsageReport>();
    expect(report.groupBy).toBe('day');
    expect(report.rows).toHaveLength(30);
    expect(report.to).toBe(utcDay(Date.now()));
    expect(report.rows.at(-1)).toEqual({
      key: report.to,
      inputTokens: 105,
      outputTokens: 35,
      totalTokens: 140,
      costUsd: 0.0014,
      runs: 1,
    });
    expect(report.totals).toEqual({
      inputTokens: 105,
      outputTokens: 35,
      totalTokens: 140,
      costUsd: 0.0014,
      runs: 1,
    });
    const keys = async (groupBy: string) =>
      (await usage(app, `?groupBy=${groupBy}`))
        .json<UsageReport>()
        .rows.map((row) => [row.key, row.totalTokens]);
    expect(await keys('model')).toEqual([
      ['gpt-mini', 100],
      ['gpt-big', 40],
    ]);
    expect(await keys('profile')).toEqual([
      ['fast', 100],
      ['smart', 40],
    ]);
    expect(await keys('metadata.team')).toEqual([
      ['blue', 100],
      ['red', 40],
    ]);
    // Another tenant sees its own only.
    expect((await usage(app, '', BETA)).json<UsageReport>().totals.totalTokens).toBe(7);
    const range = (await usage(app, '?from=2026-01-30&to=2026-02-02')).json<UsageReport>();
    expect(range.rows.map((row) => row.key)).toEqual([
      '2026-01-30',
      '2026-01-31',
      '2026-02-01',
      '2026-02-02',
    ]);
  });

  it.each([
    ['?from=2026-02-30', 'querystring.from is not a calendar day'],
    ['?to=2026-13-01', 'querystring.to is not a calendar day'],
    ['?from=yesterday', 'querystring.from'],
    ['?from=2026-03-02&to=2026-03-01', 'querystring.from (2026-03-02) is after querystring.to (2026-03-01)'],
    ['?from=2025-01-01&to=2026-03-01', 'spans 425 days, more than 400'],
    ['?groupBy=week', 'querystring.groupBy'],
    ['?groupBy=metadata.', 'querystring.groupBy'],
    ['?limit=5', 'limit'],
  ])('refuses %s with 400 naming the field', async (query, message) => {
    const { app } = await build();
    const refused = await usage(app, query);
    expect(refused.statusCode, refused.body).toBe(400);
    expect(errorOf(refused).code).toBe('ERR_VALIDATION');
    expect(errorOf(refused).message).toContain(message);
    await expectServing(app);
  });

  it('answers the longest range allowed, 400 days', async () => {
    const { app } = await build();
    const report = (await usage(app, '?from=2025-01-01&to=2026-02-04')).json<UsageReport>();
    expect(report.rows).toHaveLength(400);
  });
});
