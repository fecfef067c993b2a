import type { RunStatus } from '@tether/protocol';
import { STATUS_TEXT } from './format.js';

/** A glyph per status: the label says it in words, the glyph and the colour only repeat it. */
const STATUS_ICON: Record<RunStatus, string> = {
  scheduled: '⏲',
  queued: '◷',
  running: '▶',
  waiting_for_input: '?',
  waiting_for_children: '⋯',
  completed: '✓',
  failed: '✕',
  cancelled: '⊘',
  expired: '⌛',
};

/** A badge: an icon and a label, coloured as the run status `tone` (or `idle`), never colour alone. */
export function Badge({
  tone,
  icon,
  label,
  testId,
}: {
  tone: RunStatus | 'idle';
  icon: string;
  label: string;
  testId?: string | undefined;
}) {
  return (
    <span class={`badge badge-${tone}`}>
      <span class="badge-icon" aria-hidden="true">
        {icon}
      </span>
      <span class="badge-label" data-testid={testId}>
        {label}
      </span>
    </span>
  );
}

/** A run's status as a badge. */
export function StatusBadge({ status, testId }: { status: RunStatus; testId?: string }) {
  return <Badge tone={status} icon={STATUS_ICON[status]} label={STATUS_TEXT[status]} testId={testId} />;
}
