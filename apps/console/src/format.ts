import type { RunStatus } from '@tether/protocol';

/** A status as words. */
export const STATUS_TEXT: Record<RunStatus, string> = {
  scheduled: 'Scheduled',
  queued: 'Queued',
  running: 'Running',
  waiting_for_input: 'Waiting for input',
  waiting_for_children: 'Waiting for children',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
  expired: 'Expired',
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

/** How long until `iso`, from `now` (ms): "in 5 s", "in 3 min", "in 2 h", "in 4 d" ("now" once past). */
export function timeUntil(iso: string, now: number): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1_000);
  if (seconds <= 0) return 'now';
  if (seconds < 60) return `in ${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `in ${hours} h`;
  return `in ${Math.floor(hours / 24)} d`;
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

/** A span of time as a person reads it: "850 ms", "12.4 s", "3 min 4 s", "2 h 5 min". */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  const seconds = Math.floor(ms / 1_000);
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** How long a run has taken: start to end, or to `now` while it runs; undefined before it starts. */
export function runDuration(
  run: { startedAt?: string; finishedAt?: string },
  now: number,
): number | undefined {
  if (run.startedAt === undefined) return undefined;
  const end = run.finishedAt === undefined ? now : Date.parse(run.finishedAt);
  return Math.max(0, end - Date.parse(run.startedAt));
}

/** A token count, short: "980", "12.3k", "1.25M". */
/** US dollars as people read them: cents from a dollar up, more digits below (`$0.0031`), `$0` for none. */
export function usd(amount: number): string {
  if (amount === 0) return '$0';
  if (amount >= 1) return `$${amount.toFixed(2)}`;
  return `$${amount.toPrecision(2).replace(/0+$/, '').replace(/\.$/, '')}`;
}

export function tokens(count: number): string {
  if (count < 1_000) return String(count);
  if (count < 1_000_000) return `${(count / 1_000).toFixed(count < 10_000 ? 2 : 1)}k`;
  return `${(count / 1_000_000).toFixed(2)}M`;
}
