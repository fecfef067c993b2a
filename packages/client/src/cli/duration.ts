import { UsageError } from './exit-codes.js';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration such as `30s`, `10m`, `1h`, `1h30m`, `1.5h`, `500ms` or a
 * bare number of milliseconds, into milliseconds. Throws a `UsageError` naming
 * the flag for anything else, for zero, and for more than `maxMs`.
 */
export function parseDuration(text: string, flag = '--timeout', maxMs = 7 * 24 * 3_600_000): number {
  const input = text.trim().toLowerCase();
  let ms: number | undefined;
  if (/^\d+$/.test(input)) ms = Number(input);
  else if (/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(input)) {
    ms = 0;
    for (const match of input.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
      ms += Number(match[1]) * (UNITS[match[2] ?? ''] ?? Number.NaN);
    }
    ms = Math.round(ms);
  }
  if (ms === undefined || !Number.isFinite(ms)) {
    throw new UsageError(
      `${flag} must be a duration such as 30s, 10m, 1h or a number of milliseconds (got "${text}")`,
    );
  }
  if (ms <= 0) throw new UsageError(`${flag} must be more than zero (got "${text}")`);
  if (ms > maxMs) throw new UsageError(`${flag} must be at most ${formatDuration(maxMs)} (got "${text}")`);
  return ms;
}

/** `90_000` → `1m 30s`; `3_600_000` → `1h`; `450` → `450ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  let seconds = Math.round(ms / 1_000);
  const hours = Math.floor(seconds / 3_600);
  seconds -= hours * 3_600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  const parts: string[] = [];
  if (hours) parts.push(`${hours}h`);
  if (minutes) parts.push(`${minutes}m`);
  if (seconds || parts.length === 0) parts.push(`${seconds}s`);
  return parts.join(' ');
}

/** A countdown for a terminal: `4:05`, `1:02:03`, `0:00` once past. */
export function formatCountdown(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1_000));
  const h = Math.floor(total / 3_600);
  const m = Math.floor((total % 3_600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}
