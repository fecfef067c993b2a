import type { RunStatus } from '@tether/protocol';

/** A status as words. */
export const STATUS_TEXT: Record<RunStatus, string> = {
  queued: 'Queued',
  running: 'Running',
  waiting_for_input: 'Waiting for input',
  waiting_for_children: 'Waiting for children',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

/** How long ago `iso` was, from `now` (ms): "5 s ago", "3 min ago", "2 h ago", "4 d ago". */
export function age(iso: string, now: number): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1_000));
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} d ago`;
}

/** Time left until `iso` from `now`, as m:ss ("0:00" once past). */
export function countdown(iso: string, now: number): string {
  const seconds = Math.max(0, Math.ceil((Date.parse(iso) - now) / 1_000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

/** Pretty-prints a tool call's arguments when they are JSON, else returns them as written. */
export function prettyArgs(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}
