import type { ChildResultStatus, ChildRun, ErrorBody, Usage } from '@tether/protocol';
import type { StoreContext } from '../redis/store-context.js';
import type { RunRecord } from './records.js';

/**
 * The crew in Redis: how a child's end reads for its parent, and a run's
 * children. A parent waits on its children as a waitpoint (waitpoint-store.ts);
 * a crew tree keeps its keys in its root's hash slot, so a child's end and its
 * report to the parent are one script (`finalizeRun`).
 */

/** How much of a child's output (or error, or reason) its parent gets. */
export const CHILD_SUMMARY_MAX_CHARS = 8_000;

/** How a child's end reads for its parent: status, summary and usage. */
export interface ChildOutcome {
  status: ChildResultStatus;
  summary: string;
  usage: Usage;
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** The code of the failure a child that ran past its deadline ends with. */
export const CHILD_TIMEOUT_CODE = 'ERR_CREW_CHILD_TIMEOUT';

/** A summary capped at {@link CHILD_SUMMARY_MAX_CHARS}, with a note saying where and how much was cut. */
export function capSummary(text: string): string {
  if (text.length <= CHILD_SUMMARY_MAX_CHARS) return text;
  const note = `\n[... summary cut here: ${text.length - CHILD_SUMMARY_MAX_CHARS} more characters are in the child run's output ...]`;
  return text.slice(0, CHILD_SUMMARY_MAX_CHARS) + note;
}

/** How a run's end reads for its parent, from what ended it. */
export function childOutcome(
  end:
    | { status: 'completed'; output: string; escalated?: boolean | undefined; usage?: Usage | undefined }
    | { status: 'failed'; error: ErrorBody; usage?: Usage | undefined }
    | { status: 'cancelled'; reason?: string | undefined }
    | { status: 'expired'; expiresAtMs: number },
): ChildOutcome {
  const usage = ('usage' in end && end.usage) || NO_USAGE;
  if (end.status === 'completed') {
    return { status: end.escalated ? 'escalated' : 'completed', summary: capSummary(end.output), usage };
  }
  if (end.status === 'failed') {
    const status = end.error.code === CHILD_TIMEOUT_CODE ? 'timed_out' : 'failed';
    return { status, summary: capSummary(`${end.error.code}: ${end.error.message}`), usage };
  }
  // A crew child has no deadline to start by; should one expire, its parent learns it as cancelled.
  if (end.status === 'expired') return { status: 'cancelled', summary: 'expired before it started', usage };
  return { status: 'cancelled', summary: capSummary(end.reason ?? 'cancelled'), usage };
}

/** How an ended run's record reads for its parent. */
export function outcomeOfRecord(record: RunRecord): ChildOutcome {
  switch (record.status) {
    case 'completed':
      return childOutcome({
        status: 'completed',
        output: record.output ?? '',
        escalated: record.crew?.escalated,
        usage: record.usage,
      });
    case 'failed':
      return childOutcome({
        status: 'failed',
        error: record.error ?? { code: 'ERR_INTERNAL', message: 'The child run failed.' },
        usage: record.usage,
      });
    default:
      return childOutcome({ status: 'cancelled', reason: 'cancelled' });
  }
}

/** The crew children a run started, in order, with their status (a child that is gone is left out). */
export async function readChildren(ctx: StoreContext, runId: string): Promise<ChildRun[]> {
  const ids = await ctx.redis.lrange(ctx.keys.run(runId).children, 0, -1);
  if (ids.length === 0) return [];
  const pipeline = ctx.redis.pipeline();
  for (const id of ids) pipeline.hmget(ctx.keys.run(id).record, 'status', 'index', 'escalated', 'error');
  const replies = (await pipeline.exec()) ?? [];
  const children: ChildRun[] = [];
  ids.forEach((id, i) => {
    const [status, index, escalated, error] = (replies[i]?.[1] ?? []) as (string | null)[];
    if (!status) return;
    const child: ChildRun = { id, index: Number(index ?? 0), status: status as ChildRun['status'] };
    if (status === 'completed') child.outcome = escalated ? 'escalated' : 'completed';
    else if (status === 'cancelled') child.outcome = 'cancelled';
    else if (status === 'failed') {
      child.outcome = error?.includes(`"${CHILD_TIMEOUT_CODE}"`) ? 'timed_out' : 'failed';
    }
    children.push(child);
  });
  return children;
}
