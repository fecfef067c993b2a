import type { Run } from '@tether/protocol';
import type { RunRecord } from '@tether/store/runs';

/** A stored run as clients see it: never its tenant, spec, owner token or body hash. */
export function toRun(record: RunRecord): Run {
  const run: Run = {
    id: record.id,
    status: record.status,
    ...(record.title !== undefined ? { title: record.title } : {}),
    ...(record.sessionId !== undefined ? { sessionId: record.sessionId } : {}),
    ...(record.parentRunId !== undefined
      ? { parentRunId: record.parentRunId, rootRunId: record.rootRunId, depth: record.depth }
      : {}),
    ...(record.children !== undefined ? { children: record.children } : {}),
    ...(record.retryOf !== undefined ? { retryOf: record.retryOf } : {}),
    ...(record.batchId !== undefined ? { batchId: record.batchId } : {}),
    ...(record.scheduleId !== undefined ? { scheduleId: record.scheduleId } : {}),
    createdAt: record.createdAt,
    attempts: record.attempts,
    todos: record.todos,
  };
  if (record.runAt !== undefined) run.runAt = record.runAt;
  if (record.expiresAt !== undefined) run.expiresAt = record.expiresAt;
  if (record.startedAt !== undefined) run.startedAt = record.startedAt;
  if (record.finishedAt !== undefined) run.finishedAt = record.finishedAt;
  if (record.pendingClarify !== undefined) run.pendingClarify = record.pendingClarify;
  if (record.pendingToolCalls !== undefined) run.pendingToolCalls = record.pendingToolCalls;
  if (record.pendingApprovals !== undefined) run.pendingApprovals = record.pendingApprovals;
  if (record.output !== undefined) run.output = record.output;
  if (record.result !== undefined) run.result = record.result;
  if (record.error !== undefined) run.error = record.error;
  if (record.usage !== undefined) run.usage = record.usage;
  if (record.model !== undefined) run.model = record.model;
  if (record.metadata !== undefined) run.metadata = record.metadata;
  return run;
}

/** Where a run and its events live. */
export function runLinks(id: string): { self: string; events: string } {
  return { self: `/v1/runs/${id}`, events: `/v1/runs/${id}/events` };
}
