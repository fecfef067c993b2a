import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  budgetUses,
  exceededBudget,
  TenantBudgetStore,
  type TurnUsage,
  UsageLedger,
  usedUpBudget,
} from '../src/budgets/index.js';
import { createKeys, createRedisConnection } from '../src/redis/index.js';

/**
 * The tenants' usage ledger and budgets against the real script, on one Redis and on a cluster:
 * increments from many callers at once add up exactly, reports group by day, profile, model and
 * metadata value, every hash expires, warnings are marked once, and a tenant's own budgets win
 * over the operator's default.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'usage-ledger', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('usage'));
const ledger = new UsageLedger({ redis, keys });

let tenants = 0;
const tenant = () => `t${++tenants}-${Date.now().toString(36)}`;

const DAY = 86_400_000;
const AT = Date.UTC(2026, 2, 31, 23, 0); // 31 March, an hour before both the day and the month end

const turn = (extra: Partial<TurnUsage> = {}): TurnUsage => ({
  inputTokens: 7,
  outputTokens: 3,
  totalTokens: 10,
  micros: 1_234,
  firstTurn: false,
  ...extra,
});

describe('usage ledger', () => {
  it("keeps a tenant's ledger and budgets under the tenant's hash tag", () => {
    const usage = keys.tenantUsage('acme');
    for (const key of [
      usage.day('2026-03-31'),
      usage.month('2026-03'),
      usage.warned('2026-03', 'month:usd'),
      usage.budgets,
    ])
      expect(key).toContain(':tenant:{acme}:');
  });

  it('adds 200 turns recorded at once exactly, tokens and micro-dollars', async () => {
    const t = tenant();
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        ledger.record(t, turn({ firstTurn: i % 4 === 0, totalTokens: 10 + (i % 3) }), AT),
      ),
    );
    const totals = await ledger.totals(t, AT);
    const tokens = Array.from({ length: 200 }, (_, i) => 10 + (i % 3)).reduce((a, b) => a + b, 0);
    expect(totals).toEqual({ day: { tokens, micros: 200 * 1_234 }, month: { tokens, micros: 200 * 1_234 } });
    const report = await ledger.report(t, { from: AT, to: AT, groupBy: 'day' });
    expect(report.totals).toEqual({
      inputTokens: 1_400,
      outputTokens: 600,
      totalTokens: tokens,
      costUsd: 0.2468,
      runs: 50,
    });
  });

  it('counts each day apart, and a month across its days, and answers the totals after each turn', async () => {
    const t = tenant();
    await ledger.record(t, turn(), AT - DAY);
    const after = await ledger.record(t, turn({ totalTokens: 5 }), AT);
    expect(after).toEqual({ day: { tokens: 5, micros: 1_234 }, month: { tokens: 15, micros: 2_468 } });
    // The next day is the next month: both start from nothing.
    expect(await ledger.totals(t, AT + 2 * 3_600_000)).toEqual({
      day: { tokens: 0, micros: 0 },
      month: { tokens: 0, micros: 0 },
    });
    const report = await ledger.report(t, { from: AT - 2 * DAY, to: AT, groupBy: 'day' });
    expect(report.rows.map((row) => [row.key, row.totalTokens])).toEqual([
      ['2026-03-29', 0],
      ['2026-03-30', 10],
      ['2026-03-31', 5],
    ]);
    expect(report).toMatchObject({ from: '2026-03-29', to: '2026-03-31', groupBy: 'day' });
  });

  it('groups by profile, model and the value of a metadata key (a name holding ":")', async () => {
    const t = tenant();
    const metadata = (team: string) => [['team', team] as const, ['env:name', 'prod:eu'] as const];
    await ledger.record(
      t,
      turn({ profile: 'fast', model: 'gpt:mini', metadata: metadata('a'), firstTurn: true }),
      AT,
    );
    await ledger.record(t, turn({ profile: 'fast', model: 'gpt:mini', metadata: metadata('a') }), AT - DAY);
    await ledger.record(
      t,
      turn({ profile: 'smart', model: 'big', metadata: metadata('b'), totalTokens: 50 }),
      AT,
    );
    const range = { from: AT - DAY, to: AT };
    const profiles = await ledger.report(t, { ...range, groupBy: 'profile' });
    expect(profiles.rows.map((row) => [row.key, row.totalTokens, row.runs])).toEqual([
      ['smart', 50, 0],
      ['fast', 20, 1],
    ]);
    const models = await ledger.report(t, { ...range, groupBy: 'model' });
    expect(models.rows.map((row) => [row.key, row.totalTokens, row.costUsd])).toEqual([
      ['big', 50, 0.001234],
      ['gpt:mini', 20, 0.002468],
    ]);
    const teams = await ledger.report(t, { ...range, groupBy: 'metadata.team' });
    expect(teams.rows.map((row) => [row.key, row.totalTokens])).toEqual([
      ['b', 50],
      ['a', 20],
    ]);
    const envs = await ledger.report(t, { ...range, groupBy: 'metadata.env:name' });
    expect(envs.rows.map((row) => [row.key, row.totalTokens])).toEqual([['prod:eu', 70]]);
    expect((await ledger.report(t, { ...range, groupBy: 'metadata.none' })).rows).toEqual([]);
    expect(teams.totals.totalTokens).toBe(70);
  });

  it('gives every day and month it writes a time to live of the kept days', async () => {
    const t = tenant();
    await ledger.record(t, turn(), AT);
    const usage = keys.tenantUsage(t);
    for (const key of [usage.day('2026-03-31'), usage.month('2026-03')]) {
      const ttl = await redis.ttl(key);
      expect(ttl).toBeGreaterThan(399 * 86_400);
      expect(ttl).toBeLessThanOrEqual(400 * 86_400);
    }
  });

  it("keeps tenants' ledgers apart", async () => {
    const [a, b] = [tenant(), tenant()];
    await ledger.record(a, turn(), AT);
    expect(await ledger.totals(b, AT)).toEqual({
      day: { tokens: 0, micros: 0 },
      month: { tokens: 0, micros: 0 },
    });
    expect((await ledger.report(b, { from: AT, to: AT, groupBy: 'day' })).totals.totalTokens).toBe(0);
  });

  it('marks a warning once per tenant, period and budget, until the period ends', async () => {
    const t = tenant();
    const [use] = budgetUses(
      { day: { tokens: 100 } },
      { day: { tokens: 85, micros: 0 }, month: { tokens: 85, micros: 0 } },
      AT,
    );
    if (!use) throw new Error('no use');
    const marks = await Promise.all(Array.from({ length: 10 }, () => ledger.markWarned(t, use, AT)));
    expect(marks.filter(Boolean)).toHaveLength(1);
    expect(await ledger.markWarned(t, { ...use, unit: 'usd' }, AT)).toBe(true);
    const ttl = await redis.pttl(keys.tenantUsage(t).warned('2026-03-31', 'day:tokens'));
    expect(ttl).toBeGreaterThan(DAY);
    expect(ttl).toBeLessThanOrEqual(DAY + 3_600_000);
  });
});

describe('tenant budgets', () => {
  it("answers the tenant's own budgets over the operator's default, and the default once removed", async () => {
    const [own, other] = [tenant(), tenant()];
    const store = new TenantBudgetStore({
      redis,
      keys,
      defaults: { [own]: { day: { tokens: 1_000 } }, [other]: { month: { usd: 5 } } },
    });
    expect(await store.get(own)).toEqual({ budgets: { day: { tokens: 1_000 } }, source: 'env' });
    await store.save(own, { day: { usd: 2 } });
    expect(await store.get(own)).toMatchObject({ budgets: { day: { usd: 2 } }, source: 'api' });
    expect(await store.get(other)).toEqual({ budgets: { month: { usd: 5 } }, source: 'env' });
    expect(await store.get(tenant())).toBeUndefined();
    expect(await store.remove(own)).toBe(true);
    expect(await store.remove(own)).toBe(false);
    expect(await store.get(own)).toEqual({ budgets: { day: { tokens: 1_000 } }, source: 'env' });
    store.close();
  });

  it('finds a budget used up against the ledger, at its limit and not before', async () => {
    const t = tenant();
    const store = new TenantBudgetStore({ redis, keys });
    expect(await usedUpBudget(store, ledger, t, AT)).toBeUndefined();
    await store.save(t, { day: { tokens: 30 }, month: { usd: 0.01 } });
    await ledger.record(t, turn({ totalTokens: 29 }), AT);
    expect(await usedUpBudget(store, ledger, t, AT)).toBeUndefined();
    await ledger.record(t, turn({ totalTokens: 1 }), AT);
    expect(await usedUpBudget(store, ledger, t, AT)).toEqual({
      period: 'day',
      unit: 'tokens',
      limit: 30,
      used: 30,
      resetsAt: Date.UTC(2026, 3, 1),
    });
    // The next day's tokens start again; the month's money goes on counting.
    const next = AT + 2 * 3_600_000;
    await ledger.record(t, turn({ micros: 10_000 }), next - 3 * 3_600_000);
    expect(
      exceededBudget(budgetUses({ month: { usd: 0.01 } }, await ledger.totals(t, AT), AT)),
    ).toMatchObject({
      period: 'month',
      unit: 'usd',
      used: 0.012468,
      resetsAt: Date.UTC(2026, 3, 1),
    });
    store.close();
  });
});
