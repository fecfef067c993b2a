import type { CreateRunBody, Schedule } from '@tether/protocol';
import { QueueError } from '@tether/store';
import {
  type ScheduleRecord,
  type ScheduleTiming,
  scheduleId,
  scheduleIntervalMs,
  timingProblem,
} from '@tether/store/schedules';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors.js';
import { runSpec } from '../runs/spec.js';
import { checkSubmission } from '../runs/submission.js';

export const notFound = (name: string) => new QueueError('ERR_SCHEDULE_NOT_FOUND', `No schedule ${name}.`);

/** The tenant's schedule `name`, or 404 `ERR_SCHEDULE_NOT_FOUND` (another tenant's is not found). */
export async function scheduleOf(
  app: FastifyInstance,
  tenant: string,
  name: string,
): Promise<ScheduleRecord> {
  const schedule = await app.schedules.get(tenant, name);
  if (!schedule) throw notFound(name);
  return schedule;
}

/** Refuses a timing (400 `ERR_SCHEDULE_INVALID` naming the field); answers its interval (ms). */
export function checkTiming(app: FastifyInstance, timing: ScheduleTiming): number {
  const problem = timingProblem(timing, app.config.schedule.minIntervalMs);
  if (problem) throw new ApiError('ERR_SCHEDULE_INVALID', problem);
  return scheduleIntervalMs(timing);
}

/**
 * The run a schedule submits at each tick, checked now as `POST /v1/runs` (or, with a session,
 * `POST /v1/sessions/:id/runs`) checks it, and made into its spec once: its MCP servers sealed,
 * the tenant's default approval policy taken now.
 */
export async function scheduledSpec(
  app: FastifyInstance,
  tenant: string,
  run: CreateRunBody,
  sessionId: string | undefined,
) {
  if (sessionId === undefined) {
    checkSubmission(run, app.config);
    return runSpec(app, tenant, run);
  }
  const session = await app.sessions.record(tenant, sessionId);
  checkSubmission({ ...session.defaults, ...run }, app.config);
  return runSpec(app, tenant, run, session.defaults);
}

/** A stored schedule as clients see it: its next tick, and its last run's status now. */
export async function scheduleView(
  app: FastifyInstance,
  tenant: string,
  schedule: ScheduleRecord,
): Promise<Schedule> {
  const [next, state] = await Promise.all([
    schedule.paused ? undefined : app.schedules.next(tenant, schedule.name),
    app.schedules.state(tenant, schedule.name),
  ]);
  const last = state.lastRunId === undefined ? undefined : await app.store.getRecord(state.lastRunId);
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  const { mcpServers, ...run } = schedule.spec;
  return {
    id: scheduleId(schedule.name),
    name: schedule.name,
    ...(schedule.cron !== undefined ? { cron: schedule.cron } : {}),
    ...(schedule.every !== undefined ? { every: schedule.every } : {}),
    timezone: schedule.timezone,
    overlap: schedule.overlap,
    catchUp: schedule.catchUp,
    ...(schedule.sessionId !== undefined ? { sessionId: schedule.sessionId } : {}),
    paused: schedule.paused,
    // Sealed headers stay out of sight: the servers by name and URL.
    run: mcpServers
      ? { ...run, mcpServers: mcpServers.map(({ sealedHeaders: _sealed, ...server }) => server) }
      : run,
    nextRunAt: iso(next),
    lastRunAt: iso(state.lastRunAt),
    lastRunId: state.lastRunId ?? null,
    lastStatus: last && last.tenant === tenant ? last.status : null,
    lastSkippedAt: iso(state.lastSkippedAt),
    createdAt: new Date(schedule.createdAt).toISOString(),
    updatedAt: new Date(schedule.updatedAt).toISOString(),
  };
}
