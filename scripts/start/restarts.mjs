// How pnpm start restarts a crashed worker: 1 s after the first crash, doubling up to 30 s while
// the worker keeps crashing; a worker that stayed up a minute starts again from 1 s.

export const FIRST_DELAY_MS = 1_000;
export const MAX_DELAY_MS = 30_000;
/** A worker up this long before it crashed counts as a first crash again. */
export const STABLE_AFTER_MS = 60_000;

/**
 * The wait before restart number `crashes` (1 for the first crash in a row):
 * 1 s, 2 s, 4 s, 8 s, 16 s, then 30 s.
 */
export function restartDelayMs(crashes) {
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.max(0, crashes - 1));
}

/** One worker's crashes in a row: `crashed(uptimeMs)` counts one and says how long to wait. */
export class RestartBackoff {
  crashes = 0;

  crashed(uptimeMs) {
    this.crashes = uptimeMs >= STABLE_AFTER_MS ? 1 : this.crashes + 1;
    return restartDelayMs(this.crashes);
  }
}
