/**
 * `client.usage`, `client.budgets` and `tether usage` against the fake API on a real port: the
 * query they send, the table and budgets they print, `--json`, and flags refused before any request.
 */
import type { TenantBudgetsView, UsageReport } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeApi } from '../testing/fake-api.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import { runCli } from './program.js';

let api: FakeApi;

const REPORT: UsageReport = {
  from: '2026-03-01',
  to: '2026-03-02',
  groupBy: 'model',
  totals: { inputTokens: 1_500, outputTokens: 500, totalTokens: 2_000, costUsd: 0.012, runs: 3 },
  rows: [
    { key: 'gpt-big', inputTokens: 1_200, outputTokens: 300, totalTokens: 1_500, costUsd: 0.01, runs: 1 },
    { key: 'gpt-mini', inputTokens: 300, outputTokens: 200, totalTokens: 500, costUsd: 0.002, runs: 2 },
  ],
};
const BUDGETS: TenantBudgetsView = {
  budgets: { day: { tokens: 10_000 }, month: { usd: 5 } },
  source: 'api',
  updatedAt: '2026-03-01T00:00:00.000Z',
  used: {
    day: { tokens: 8_500, usd: 0.05, resetsAt: '2026-03-03T00:00:00.000Z' },
    month: { tokens: 9_000, usd: 1.25, resetsAt: '2026-04-01T00:00:00.000Z' },
  },
};

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  api.usage.set('tenant-a', { report: REPORT, budgets: BUDGETS });
  await api.start();
});

afterEach(async () => {
  await api.close();
});

async function cli(args: string[]) {
  const stdout = new RecordingOutput(false);
  const stderr = new RecordingOutput(false);
  const env = { TETHER_URL: api.baseUrl, TETHER_API_KEY: 'key-a', NO_COLOR: '1' };
  const code = await runCli(args, { stdout, stderr, stdin: new KeyboardInput(false), env });
  return { code, out: stdout.plain, err: stderr.plain };
}

describe('tether usage', () => {
  it('asks for the range and grouping, and prints a table with totals and the budgets used', async () => {
    const { code, out } = await cli([
      'usage',
      '--from',
      '2026-03-01',
      '--to',
      '2026-03-02',
      '--group-by',
      'model',
    ]);
    expect(code).toBe(0);
    const asked = api.requests.find((r) => r.path === '/v1/usage');
    expect(Object.fromEntries(asked?.query ?? [])).toEqual({
      from: '2026-03-01',
      to: '2026-03-02',
      groupBy: 'model',
    });
    const lines = out.split('\n');
    expect(lines[0]).toBe('Usage 2026-03-01 to 2026-03-02 by model');
    expect(lines[1]).toMatch(/^MODEL\s+RUNS\s+INPUT\s+OUTPUT\s+TOTAL\s+COST$/);
    expect(lines[2]).toMatch(/^gpt-big\s+1\s+1,200\s+300\s+1,500\s+\$0\.0100$/);
    expect(lines[4]).toMatch(/^total\s+3\s+1,500\s+500\s+2,000\s+\$0\.0120$/);
    expect(out).toContain('day tokens  8,500 of 10,000 (85%)  resets 2026-03-03T00:00:00.000Z');
    expect(out).toContain('month usd     $1.2500 of $5 (25%)');
  });

  it('prints { usage, budgets } with --json', async () => {
    const { code, out } = await cli(['usage', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ usage: REPORT, budgets: BUDGETS });
    expect([...(api.requests.find((r) => r.path === '/v1/usage')?.query ?? [])]).toEqual([]);
  });

  it.each([
    [['--from', '1 March'], '--from must be a date'],
    [['--to', '2026-3-1'], '--to must be a date'],
    [['--group-by', 'week'], '--group-by must be day, model, profile or metadata.<key>'],
  ])('refuses %j before asking the API', async (flags, message) => {
    const { code, err } = await cli(['usage', ...flags]);
    expect(code).not.toBe(0);
    expect(err).toContain(message);
    expect(api.requests).toHaveLength(0);
  });
});
