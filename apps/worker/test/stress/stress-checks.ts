import { type RunEvent, TERMINAL_EVENT_TYPES } from '@tether/protocol';
import type { Deployment } from '../harness.js';
import type { RunTracker, TrackedRun } from './run-tracker.js';

/**
 * What the stress driver found wrong: an invariant of `checkInvariants` (its rule's name), or one
 * of the run logs' rules below, about a run where there is one.
 *
 * - `terminal-event`: a run has exactly one terminal event, it is its last, and its record's status says the same.
 * - `request-once`: a question or a client tool call is resolved (answered, received, timed out) at most once.
 * - `child-reported`: a crew child's end reaches its parent once (`child.finished`), and a parent
 *   that completed has every child's.
 * - `cancelled-children`: a cancelled parent's children all end; none starts an attempt after the
 *   parent's `run.cancelled`, and one that ends after it ends cancelled (or completed: a final
 *   answer a cancel does not undo).
 * - `run-listed`: every run submitted (crew children aside) is in its tenant's list.
 * - `never-ended`, `op-error`: the driver's own (see engine-stress.ts).
 */
export interface StressViolation {
  rule: string;
  runId?: string | undefined;
  detail: string;
}

/** Stream ids in order (`<ms>-<seq>`). */
export function compareEventIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}

const TERMINAL_STATUS: Record<string, string> = {
  'run.completed': 'completed',
  'run.failed': 'failed',
  'run.cancelled': 'cancelled',
};

/** Each run's log, read from Redis (a few at a time). */
export async function readLogs(d: Deployment, ids: readonly string[]): Promise<Map<string, RunEvent[]>> {
  const logs = new Map<string, RunEvent[]>();
  for (let i = 0; i < ids.length; i += 32) {
    const batch = ids.slice(i, i + 32);
    const read = await Promise.all(batch.map((id) => d.store.readEvents(id)));
    for (const [j, id] of batch.entries()) logs.set(id, read[j] ?? []);
  }
  return logs;
}

/** The run logs' rules, over every run the tracker followed (all ended: see `never-ended`). */
export async function checkRunLogs(d: Deployment, tracker: RunTracker): Promise<StressViolation[]> {
  const logs = await readLogs(d, tracker.order);
  const records = await d.store.getMany(tracker.order);
  const violations: StressViolation[] = [];
  const report = (rule: string, runId: string, detail: string) => violations.push({ rule, runId, detail });
  tracker.order.forEach((id, i) => {
    const events = logs.get(id) ?? [];
    const terminals = events.filter((e) => TERMINAL_EVENT_TYPES.includes(e.type));
    const last = events.at(-1);
    if (terminals.length !== 1 || !last || !TERMINAL_EVENT_TYPES.includes(last.type)) {
      report(
        'terminal-event',
        id,
        `run ${id} has ${terminals.length} terminal events (${terminals.map((e) => `${e.type} ${e.id}`).join(', ') || 'none'}); its last event is ${last ? `${last.type} ${last.id}` : 'none'}`,
      );
    } else if (records[i]?.status !== TERMINAL_STATUS[last.type]) {
      report(
        'terminal-event',
        id,
        `run ${id} ended with ${last.type} but its record says ${records[i]?.status}`,
      );
    }
    checkRequests(id, events, report);
    const run = tracker.runs.get(id) as TrackedRun;
    if (run.children.length > 0) checkChildren(run, logs, report);
  });
  return violations;
}

/** `request-once`: each request of a run resolved at most once. */
function checkRequests(
  id: string,
  events: RunEvent[],
  report: (rule: string, runId: string, detail: string) => void,
) {
  const resolutions = new Map<string, string[]>();
  for (const event of events) {
    if (
      !['clarify.answered', 'clarify.timed_out', 'tool.output_received', 'tool.timed_out'].includes(
        event.type,
      )
    )
      continue;
    const requestId = (event.data as { requestId: string }).requestId;
    resolutions.set(requestId, [...(resolutions.get(requestId) ?? []), `${event.type} ${event.id}`]);
  }
  for (const [requestId, seen] of resolutions) {
    if (seen.length > 1)
      report(
        'request-once',
        id,
        `request ${requestId} of run ${id} was resolved ${seen.length} times: ${seen.join(', ')}`,
      );
  }
}

/** `child-reported` and `cancelled-children` for one crew parent. */
function checkChildren(
  parent: TrackedRun,
  logs: Map<string, RunEvent[]>,
  report: (rule: string, runId: string, detail: string) => void,
) {
  const events = logs.get(parent.id) ?? [];
  const ended = events.find((e) => TERMINAL_EVENT_TYPES.includes(e.type));
  for (const childId of parent.children) {
    const reports = events.filter(
      (e) => e.type === 'child.finished' && (e.data as { childRunId: string }).childRunId === childId,
    );
    if (reports.length > 1)
      report(
        'child-reported',
        childId,
        `child ${childId} was reported ${reports.length} times to ${parent.id}`,
      );
    if (ended?.type === 'run.completed' && reports.length === 0) {
      report('child-reported', childId, `parent ${parent.id} completed without child ${childId}'s report`);
    }
    if (ended?.type !== 'run.cancelled') continue;
    const child = logs.get(childId) ?? [];
    const after = (e: RunEvent) => compareEventIds(e.id, ended.id) > 0;
    const started = child.filter((e) => e.type === 'attempt.started' && after(e));
    if (started.length > 0) {
      report(
        'cancelled-children',
        childId,
        `child ${childId} started attempt(s) ${started.map((e) => e.id).join(', ')} after its parent ${parent.id} was cancelled (${ended.id})`,
      );
    }
    const end = child.find((e) => TERMINAL_EVENT_TYPES.includes(e.type));
    if (!end) report('cancelled-children', childId, `child ${childId} of cancelled ${parent.id} never ended`);
    else if (after(end) && end.type !== 'run.cancelled' && end.type !== 'run.completed') {
      report(
        'cancelled-children',
        childId,
        `child ${childId} ended ${end.type} (${end.id}) after its parent ${parent.id} was cancelled (${ended.id})`,
      );
    }
  }
}

/** `run-listed`: each tenant's list, every page, holds every run submitted for it. */
export async function checkListing(d: Deployment, tracker: RunTracker): Promise<StressViolation[]> {
  const byTenant = new Map<string, string[]>();
  for (const id of tracker.order) {
    const run = tracker.runs.get(id) as TrackedRun;
    if (run.parentId === undefined) byTenant.set(run.tenant, [...(byTenant.get(run.tenant) ?? []), id]);
  }
  const violations: StressViolation[] = [];
  for (const [tenant, ids] of byTenant) {
    const listed = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await d.service.list(tenant, { limit: 200, cursor });
      for (const run of page.runs) listed.add(run.id);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    for (const id of ids) {
      if (!listed.has(id))
        violations.push({
          rule: 'run-listed',
          runId: id,
          detail: `run ${id} is missing from tenant ${tenant}'s list`,
        });
    }
  }
  return violations;
}
