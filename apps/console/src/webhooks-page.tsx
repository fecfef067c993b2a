import type { TetherClient, Webhook } from '@tether/client';
import { age } from './format.js';
import { ListTable } from './list-table.js';
import { useRead } from './reading.js';

/** The tenant's webhook endpoints: where events go, which ones, and whether each is healthy. */
export function WebhooksPage({ client }: { client: TetherClient }) {
  const { data, error, reload } = useRead('the webhooks', (signal) => client.webhooks.list({ signal }), [
    client,
  ]);
  const now = Date.now();
  return (
    <>
      <PageHead title="Webhooks" onRefresh={reload} />
      <p class="muted">
        Events are POSTed to each endpoint, signed (Standard Webhooks). Add one with{' '}
        <code>tether webhooks add &lt;url&gt;</code> or <code>POST /v1/webhooks</code>.
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? (
        error ? null : (
          <p>Loading…</p>
        )
      ) : data.data.length === 0 ? (
        <p>No webhook endpoints yet.</p>
      ) : (
        <ListTable<Webhook>
          caption="Webhook endpoints"
          rows={data.data}
          rowKey={(hook) => hook.id}
          columns={[
            { label: 'URL', cell: (hook) => <code class="wrap">{hook.url}</code> },
            { label: 'Events', cell: (hook) => hook.events.join(', ') },
            { label: 'State', cell: (hook) => <WebhookState hook={hook} now={now} />, class: 'nowrap' },
            { label: 'Description', cell: (hook) => hook.description ?? '' },
            {
              label: 'Created',
              cell: (hook) => <time dateTime={hook.createdAt}>{age(hook.createdAt, now)}</time>,
              class: 'nowrap',
            },
          ]}
        />
      )}
    </>
  );
}

function WebhookState({ hook, now }: { hook: Webhook; now: number }) {
  if (!hook.enabled) {
    return <span class="pill pill-bad">Disabled{hook.disabledReason ? `: ${hook.disabledReason}` : ''}</span>;
  }
  if (hook.failingSince)
    return <span class="pill pill-warn">Failing since {age(hook.failingSince, now)}</span>;
  return <span class="pill pill-ok">Enabled</span>;
}

/** A section page's heading with a Refresh button beside it. */
export function PageHead({ title, onRefresh }: { title: string; onRefresh?: () => void }) {
  return (
    <div class="page-head">
      <h1>{title}</h1>
      {onRefresh ? (
        <button type="button" onClick={onRefresh}>
          Refresh
        </button>
      ) : null}
    </div>
  );
}
