import type { Schedule, TetherClient } from '@tether/client';
import { StatusBadge } from './badge.js';
import { age, timeUntil } from './format.js';
import { ListTable } from './list-table.js';
import { useRead } from './reading.js';
import { onLinkClick, runHref } from './router.js';
import { PageHead } from './webhooks-page.js';

/** The tenant's schedules: when each fires next, and how its last run went. */
export function SchedulesPage({ client }: { client: TetherClient }) {
  const { data, error, reload } = useRead('the schedules', (signal) => client.schedules.list({ signal }), [
    client,
  ]);
  const now = Date.now();
  return (
    <>
      <PageHead title="Schedules" onRefresh={reload} />
      <p class="muted">
        Runs submitted on a cron pattern or at an interval. Add one with{' '}
        <code>tether schedules add &lt;name&gt; "…" --cron "0 3 * * *"</code> or{' '}
        <code>POST /v1/schedules</code>.
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? (
        error ? null : (
          <p>Loading…</p>
        )
      ) : data.data.length === 0 ? (
        <p>No schedules yet.</p>
      ) : (
        <ListTable<Schedule>
          caption="Schedules"
          rows={data.data}
          rowKey={(schedule) => schedule.id}
          columns={[
            { label: 'Name', cell: (schedule) => <code>{schedule.name}</code> },
            { label: 'When', cell: (schedule) => <When schedule={schedule} /> },
            {
              label: 'Next run',
              cell: (schedule) =>
                schedule.paused ? (
                  <span class="pill pill-warn">Paused</span>
                ) : schedule.nextRunAt ? (
                  <time dateTime={schedule.nextRunAt}>{timeUntil(schedule.nextRunAt, now)}</time>
                ) : (
                  '—'
                ),
              class: 'nowrap',
            },
            {
              label: 'Last run',
              cell: (schedule) => <LastRun schedule={schedule} now={now} />,
              class: 'nowrap',
            },
            { label: 'Overlap', cell: (schedule) => schedule.overlap.replace('_', ' ') },
          ]}
        />
      )}
    </>
  );
}

function When({ schedule }: { schedule: Schedule }) {
  if (schedule.every) return <>every {schedule.every}</>;
  return (
    <>
      <code>{schedule.cron}</code> {schedule.timezone}
    </>
  );
}

function LastRun({ schedule, now }: { schedule: Schedule; now: number }) {
  if (!schedule.lastRunId || !schedule.lastRunAt) return <span class="muted">None yet</span>;
  return (
    <>
      <a href={runHref(schedule.lastRunId)} onClick={onLinkClick}>
        <time dateTime={schedule.lastRunAt}>{age(schedule.lastRunAt, now)}</time>
      </a>{' '}
      {schedule.lastStatus ? <StatusBadge status={schedule.lastStatus} /> : null}
    </>
  );
}
