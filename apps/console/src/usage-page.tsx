import type { TenantBudgetsView, TetherClient, UsageReport } from '@tether/client';
import { tokens, usd } from './format.js';
import { useRead } from './reading.js';
import { usageBars } from './usage-chart.js';
import { PageHead } from './webhooks-page.js';

const CHART = { width: 600, height: 120 };

/** The tenant's usage over the last 30 days (a bar per day of tokens), its totals, and its budgets used. */
export function UsagePage({ client }: { client: TetherClient }) {
  const { data, error, reload } = useRead(
    'the usage',
    async (signal) => {
      const [usage, budgets] = await Promise.all([client.usage({}, { signal }), client.budgets({ signal })]);
      return { usage, budgets };
    },
    [client],
  );
  return (
    <>
      <PageHead title="Usage" onRefresh={reload} />
      <p class="muted">
        Tokens and cost of your runs' model turns per UTC day, from the ledger. Also <code>tether usage</code>{' '}
        or <code>GET /v1/usage</code>.
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? (
        error ? null : (
          <p>Loading…</p>
        )
      ) : (
        <>
          <UsageChart report={data.usage} />
          <Totals report={data.usage} />
          <Budgets view={data.budgets} />
        </>
      )}
    </>
  );
}

function UsageChart({ report }: { report: UsageReport }) {
  const bars = usageBars(
    report.rows.map((row) => ({ key: row.key, value: row.totalTokens })),
    CHART.width,
    CHART.height,
  );
  return (
    <figure class="usage-chart">
      <svg
        viewBox={`0 0 ${CHART.width} ${CHART.height}`}
        width="100%"
        role="img"
        aria-label={`Tokens per day, ${report.from} to ${report.to}`}
      >
        {bars.map((bar) => (
          <rect key={bar.key} x={bar.x} y={bar.y} width={bar.width} height={bar.height} fill="currentColor">
            <title>{`${bar.key}: ${tokens(bar.value)} tokens`}</title>
          </rect>
        ))}
      </svg>
      <figcaption class="muted">
        Tokens per day, {report.from} to {report.to}
      </figcaption>
    </figure>
  );
}

function Totals({ report }: { report: UsageReport }) {
  const { totals } = report;
  return (
    <dl class="usage-totals" aria-label="Totals">
      <dt>Tokens</dt>
      <dd>
        {tokens(totals.totalTokens)} ({tokens(totals.inputTokens)} in, {tokens(totals.outputTokens)} out)
      </dd>
      <dt>Cost</dt>
      <dd>{usd(totals.costUsd)}</dd>
      <dt>Runs</dt>
      <dd>{totals.runs}</dd>
    </dl>
  );
}

function Budgets({ view }: { view: TenantBudgetsView }) {
  if (!view.budgets)
    return (
      <p>
        No budgets. Set them with <code>PUT /v1/budgets</code>.
      </p>
    );
  const rows: { label: string; used: number; limit: number; shown: string; resetsAt: string }[] = [];
  for (const period of ['day', 'month'] as const) {
    const limits = view.budgets[period];
    const used = view.used[period];
    if (limits?.tokens !== undefined)
      rows.push({
        label: `${period} tokens`,
        used: used.tokens,
        limit: limits.tokens,
        shown: `${tokens(used.tokens)} of ${tokens(limits.tokens)}`,
        resetsAt: used.resetsAt,
      });
    if (limits?.usd !== undefined)
      rows.push({
        label: `${period} USD`,
        used: used.usd,
        limit: limits.usd,
        shown: `${usd(used.usd)} of ${usd(limits.usd)}`,
        resetsAt: used.resetsAt,
      });
  }
  return (
    <section aria-label="Budgets">
      <h2>Budgets {view.source === 'env' ? <span class="muted">(the operator's default)</span> : null}</h2>
      <ul class="usage-budgets">
        {rows.map((row) => (
          <li key={row.label}>
            <span>{row.label}</span>{' '}
            <meter
              min={0}
              max={row.limit}
              low={row.limit * 0.8}
              high={row.limit * 0.8}
              optimum={0}
              value={Math.min(row.used, row.limit)}
            />{' '}
            <span>{row.shown}</span> <span class="muted">resets {row.resetsAt}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
