import type { TenantBudgetsView, UsageReport, UsageTotals } from '@tether/protocol';
import type { CommandContext, RegisterCommand } from './command-context.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const GROUP_BY = /^(day|model|profile|metadata\..+)$/;

/**
 * `tether usage [--from] [--to] [--group-by]`: the tenant's usage as a table (a row per day, model,
 * profile or metadata value, then the totals) and its budgets with what it used of them; `--json`
 * prints `{ usage, budgets }` as the API answers them.
 */
export async function usageCommand(
  options: { from?: string; to?: string; groupBy?: string; json?: boolean },
  ctx: CommandContext,
): Promise<ExitCode> {
  const { client, io, colors: c } = ctx;
  for (const [flag, value] of [
    ['--from', options.from],
    ['--to', options.to],
  ] as const) {
    if (value !== undefined && !DATE.test(value))
      throw new UsageError(`${flag} must be a date, YYYY-MM-DD (got "${value}")`);
  }
  if (options.groupBy !== undefined && !GROUP_BY.test(options.groupBy)) {
    throw new UsageError(
      `--group-by must be day, model, profile or metadata.<key> (got "${options.groupBy}")`,
    );
  }
  const signal = io.signal ? { signal: io.signal } : {};
  const [usage, budgets] = await Promise.all([
    client.usage({ from: options.from, to: options.to, groupBy: options.groupBy }, signal),
    client.budgets(signal),
  ]);
  if (options.json) {
    io.stdout.write(`${JSON.stringify({ usage, budgets })}\n`);
    return EXIT.ok;
  }
  io.stdout.write(`${c.bold(`Usage ${usage.from} to ${usage.to}`)} ${c.dim(`by ${usage.groupBy}`)}\n`);
  for (const line of usageTable(usage)) io.stdout.write(`${line}\n`);
  for (const line of budgetLines(budgets)) io.stdout.write(`${line}\n`);
  return EXIT.ok;
}

/** The report as aligned columns: a header, a row per group, the totals. */
export function usageTable(report: UsageReport): string[] {
  const cells = (key: string, t: UsageTotals) => [
    key,
    String(t.runs),
    t.inputTokens.toLocaleString('en-US'),
    t.outputTokens.toLocaleString('en-US'),
    t.totalTokens.toLocaleString('en-US'),
    `$${t.costUsd.toFixed(4)}`,
  ];
  const rows = [
    [report.groupBy.toUpperCase(), 'RUNS', 'INPUT', 'OUTPUT', 'TOTAL', 'COST'],
    ...report.rows.map((row) => cells(row.key, row)),
    cells('total', report.totals),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  return rows.map((row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  '),
  );
}

/** Each budget in force, with what was used of it and when it resets. */
export function budgetLines(view: TenantBudgetsView): string[] {
  if (!view.budgets) return ['No budgets.'];
  const lines = [`Budgets (${view.source === 'env' ? "the operator's default" : 'your own'}):`];
  for (const period of ['day', 'month'] as const) {
    const limits = view.budgets[period];
    const used = view.used[period];
    if (limits?.tokens !== undefined)
      lines.push(
        `  ${period} tokens  ${used.tokens.toLocaleString('en-US')} of ${limits.tokens.toLocaleString('en-US')} (${percent(used.tokens, limits.tokens)})  resets ${used.resetsAt}`,
      );
    if (limits?.usd !== undefined)
      lines.push(
        `  ${period} usd     $${used.usd.toFixed(4)} of $${limits.usd} (${percent(used.usd, limits.usd)})  resets ${used.resetsAt}`,
      );
  }
  return lines;
}

function percent(used: number, limit: number): string {
  return `${Math.floor((used / limit) * 100)}%`;
}

export const registerUsageCommand: RegisterCommand = (program, context, done) => {
  program
    .command('usage')
    .description("your tenant's tokens, cost and runs per day (or model, profile, metadata), and its budgets")
    .option('--from <date>', 'the first day, YYYY-MM-DD (UTC; default 29 days before --to)')
    .option('--to <date>', 'the last day, YYYY-MM-DD (UTC; default today)')
    .option('--group-by <what>', 'day (default), model, profile or metadata.<key>')
    .option('--json', 'print { usage, budgets } as JSON')
    .action(async (options: { from?: string; to?: string; groupBy?: string; json?: boolean }) => {
      done(await usageCommand(options, context()));
    });
};
