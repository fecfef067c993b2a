import type { Run } from '@tether/protocol';

/** A run's model: its name, with its profile as a tooltip; a dash until a turn has answered. */
export function ModelName({ run }: { run: Pick<Run, 'model'> }) {
  if (!run.model) return <>–</>;
  const { name, profile } = run.model;
  return (
    <span class="model-name" title={name === profile ? undefined : `Profile ${profile}`}>
      {name}
    </span>
  );
}
