import type { ChildResultStatus, Usage } from '@tether/protocol';

/**
 * How one delegated task ended, as the delegating run's tool result lists it
 * (one entry per task, in order; the worker caps `summary` at 8,000
 * characters).
 */
export interface CrewResultEntry {
  /** The task's place in the delegation. */
  index: number;
  /** The child run that carried it out. */
  runId: string;
  status: ChildResultStatus;
  /** The child's final output (or why it has none). */
  summary: string;
  usage: Usage;
  durationMs: number;
}
