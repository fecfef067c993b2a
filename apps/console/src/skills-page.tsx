import type { SkillSummary, TetherClient } from '@tether/client';
import { age } from './format.js';
import { ListTable } from './list-table.js';
import { useRead } from './reading.js';
import { PageHead } from './webhooks-page.js';

/** The tenant's skills (Agent Skills), what each is for, and how much of the tenant's room they take. */
export function SkillsPage({ client }: { client: TetherClient }) {
  const { data, error, reload } = useRead('the skills', (signal) => client.skills.list({ signal }), [client]);
  const now = Date.now();
  return (
    <>
      <PageHead title="Skills" onRefresh={reload} />
      <p class="muted">
        Procedures runs with the <code>skill</code> toolset can read and follow. Add one with{' '}
        <code>PUT /v1/skills/:name</code>.
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? (
        error ? null : (
          <p>Loading…</p>
        )
      ) : (
        <>
          <p>
            {data.count} of {data.maxCount} skills, {kilobytes(data.bytes)} of {kilobytes(data.maxBytes)}.
          </p>
          {data.data.length === 0 ? (
            <p>No skills yet.</p>
          ) : (
            <ListTable<SkillSummary>
              caption="Skills"
              rows={data.data}
              rowKey={(skill) => skill.name}
              columns={[
                { label: 'Name', cell: (skill) => <code>{skill.name}</code>, class: 'nowrap' },
                { label: 'Description', cell: (skill) => skill.description },
                { label: 'Pinned', cell: (skill) => (skill.pinned ? 'Pinned' : 'No'), class: 'nowrap' },
                {
                  label: 'Files',
                  cell: (skill) => `${skill.fileCount}, ${kilobytes(skill.bytes)}`,
                  class: 'nowrap',
                },
                {
                  label: 'Updated',
                  cell: (skill) => <time dateTime={skill.updatedAt}>{age(skill.updatedAt, now)}</time>,
                  class: 'nowrap',
                },
              ]}
            />
          )}
        </>
      )}
    </>
  );
}

function kilobytes(bytes: number): string {
  return bytes < 1_024 ? `${bytes} B` : `${(bytes / 1_024).toFixed(1)} KB`;
}
