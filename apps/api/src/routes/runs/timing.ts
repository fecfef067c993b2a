import { RUN_LIMITS } from '@tether/protocol';
import { ApiError } from '../../errors.js';

/** The fields of a body that say when its run starts (`RunTimingSchema`). */
export interface TimingFields {
  runAt?: string | undefined;
  delayMs?: number | undefined;
}

/**
 * When the run a body asks for starts (epoch ms), or undefined for now: `runAt`, or `delayMs` from
 * `now`, one of them only (400 `ERR_VALIDATION` naming both); more than
 * {@link RUN_LIMITS.scheduleMaxMs} ahead is refused (400). A `runAt` in the past is returned as
 * it is: the run starts at once. The schema has checked each field's form already.
 */
export function startTime(body: TimingFields, now = Date.now()): number | undefined {
  if (body.runAt !== undefined && body.delayMs !== undefined) {
    throw new ApiError('ERR_VALIDATION', 'body.runAt and body.delayMs: give one of them, not both.');
  }
  if (body.delayMs !== undefined) return now + body.delayMs;
  if (body.runAt === undefined) return undefined;
  const runAtMs = Date.parse(body.runAt);
  if (Number.isNaN(runAtMs)) {
    throw new ApiError('ERR_VALIDATION', 'body.runAt must be an ISO 8601 date-time (2030-01-31T09:00:00Z).');
  }
  if (runAtMs - now > RUN_LIMITS.scheduleMaxMs) {
    throw new ApiError(
      'ERR_VALIDATION',
      `body.runAt is more than a year ahead (at most ${RUN_LIMITS.scheduleMaxMs / 86_400_000} days from now).`,
    );
  }
  return runAtMs;
}

/** The fields of a body that give its run a deadline to start by (`RunExpirySchema`). */
export interface ExpiryFields {
  expiresAt?: string | undefined;
  ttlMs?: number | undefined;
}

/**
 * The deadline to start by that a body gives its run (epoch ms), or undefined for none: `expiresAt`,
 * or `ttlMs` from `now`, one of them only (400 `ERR_VALIDATION` naming both). An `expiresAt` not
 * after now is refused (400: such a run could never start), as one more than
 * {@link RUN_LIMITS.expiryMaxMs} ahead, or before the run's start time `runAtMs`. The schema has
 * checked each field's form (and `ttlMs`'s bounds) already.
 */
export function expiryTime(
  body: TimingFields & ExpiryFields,
  runAtMs: number | undefined,
  now = Date.now(),
): number | undefined {
  if (body.expiresAt !== undefined && body.ttlMs !== undefined) {
    throw new ApiError('ERR_VALIDATION', 'body.expiresAt and body.ttlMs: give one of them, not both.');
  }
  let expiresAtMs: number;
  if (body.ttlMs !== undefined) expiresAtMs = now + body.ttlMs;
  else if (body.expiresAt === undefined) return undefined;
  else {
    expiresAtMs = Date.parse(body.expiresAt);
    if (Number.isNaN(expiresAtMs)) {
      throw new ApiError(
        'ERR_VALIDATION',
        'body.expiresAt must be an ISO 8601 date-time (2030-01-31T09:00:00Z).',
      );
    }
    if (expiresAtMs <= now) {
      throw new ApiError('ERR_VALIDATION', 'body.expiresAt is not in the future: the run could never start.');
    }
    if (expiresAtMs - now > RUN_LIMITS.expiryMaxMs) {
      throw new ApiError(
        'ERR_VALIDATION',
        `body.expiresAt is more than a year ahead (at most ${RUN_LIMITS.expiryMaxMs / 86_400_000} days from now).`,
      );
    }
  }
  if (runAtMs !== undefined && expiresAtMs < runAtMs) {
    const field = body.ttlMs !== undefined ? 'body.ttlMs' : 'body.expiresAt';
    const start = body.runAt !== undefined ? 'body.runAt' : 'body.delayMs';
    throw new ApiError(
      'ERR_VALIDATION',
      `${field} ends before ${start}: the run would expire before it could start.`,
    );
  }
  return expiresAtMs;
}

/** A body without its timing and expiry fields: what the run's spec keeps. */
export function withoutTiming<T extends TimingFields & ExpiryFields>(
  body: T,
): Omit<T, keyof TimingFields | keyof ExpiryFields> {
  const { runAt: _runAt, delayMs: _delayMs, expiresAt: _expiresAt, ttlMs: _ttlMs, ...rest } = body;
  return rest;
}
