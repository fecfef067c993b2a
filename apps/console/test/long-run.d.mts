import type { RunEventInput } from '@tether/protocol';
import type { RunStore } from '@tether/store/runs';

/** How many events the long run is given. */
export const LONG_RUN_EVENTS: number;
/** The events of a long run's steps, `count` in all (default {@link LONG_RUN_EVENTS}). */
export function longRunEvents(count?: number): RunEventInput[];
/** Appends {@link longRunEvents} to `runId`'s log through `store`, 500 per call. */
export function appendLongRun(store: RunStore, runId: string, count?: number): Promise<void>;
