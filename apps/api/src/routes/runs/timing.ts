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

/** A body without its timing fields: what the run's spec keeps. */
export function withoutTiming<T extends TimingFields>(body: T): Omit<T, keyof TimingFields> {
  const { runAt: _runAt, delayMs: _delayMs, ...rest } = body;
  return rest;
}
