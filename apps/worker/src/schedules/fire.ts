import { type RunEventInput, TERMINAL_STATUSES } from '@tether/protocol';
import { QueueError } from '@tether/store';
import type { RunRecord, RunService } from '@tether/store/runs';
import {
  type ScheduleJobData,
  type ScheduleRecord,
  type ScheduleStore,
  scheduleId,
  scheduleRunId,
} from '@tether/store/schedules';
import type { SessionService } from '@tether/store/sessions';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';

/**
 * A schedule's firing: the processor of the jobs of the schedules queue. BullMQ's job scheduler
 * makes one job per tick (id `repeat:<scheduler>:<tick ms>`) and adds the next tick's job as a
 * worker takes this one, so the ticks are BullMQ's and none is made twice by the number of
 * processes. A job reads as the story:
 *
 * 1. find the tick: the schedule as it is now (deleted: `gone`; paused: `paused`, for a tick in
 *    flight as it was paused), and its time (a tick more than the grace late, with
 *    `catchUp: "none"`, was missed while no worker ran: `skipped_missed`);
 * 2. settle the overlap with its last run, when that run is live: `skip` tells that run
 *    (`schedule.skipped` on its log) and makes none (`skipped_overlap`); `cancel_previous`
 *    cancels it first; `enqueue` does nothing;
 * 3. submit the run with an id made from the tick (`scheduleRunId`): a job taken again after its
 *    worker died (kill -9) submits the same id, and the store answers the run made the first time
 *    (`duplicate`) instead of a second one;
 * 4. record it as the schedule's last run; `schedule.fired` follows `run.queued` on its log, written
 *    in the step that creates the run, and its webhook deliveries are recorded.
 *
 * Refusals of the run (its session deleted, a budget) end the job: `failed`, logged, not retried.
 * Anything else (Redis) throws, and BullMQ tries the job again.
 */

/** How a firing ended: the label of `tether_schedule_firings_total{outcome}`. */
export type FiringOutcome =
  | 'fired'
  | 'duplicate'
  | 'skipped_overlap'
  | 'skipped_missed'
  | 'paused'
  | 'gone'
  | 'failed';

export interface FiringOptions {
  schedules: ScheduleStore;
  runs: RunService;
  sessions: SessionService;
  /** Records the webhook deliveries of the events a firing appends. */
  webhooks: { dispatch(runId: string, tenant?: string): Promise<number> };
  /** How late a tick of a `catchUp: "none"` schedule may be and still fire (ms). */
  catchUpGraceMs: number;
  log: Logger;
  onOutcome?: ((outcome: FiringOutcome, tenant: string) => void) | undefined;
}

/** One tick (or trigger) of a schedule, as its job carries it. */
interface Tick {
  tenant: string;
  name: string;
  /** The tick's time (epoch ms): the job scheduler's, or the trigger's. */
  at: number;
  trigger: boolean;
}

export function createFiring(options: FiringOptions) {
  const { schedules, log } = options;

  async function process(job: Job<ScheduleJobData>): Promise<FiringOutcome> {
    const tick = tickOf(job);
    let outcome: FiringOutcome;
    try {
      outcome = await fire(tick);
    } catch (error) {
      if (!(error instanceof QueueError) || (error.statusCode ?? 500) >= 500) throw error;
      log.warn({ err: error, tenant: tick.tenant, schedule: tick.name }, 'schedule firing refused');
      outcome = 'failed';
    }
    log.debug({ tenant: tick.tenant, schedule: tick.name, tick: tick.at, outcome }, 'schedule tick');
    options.onOutcome?.(outcome, tick.tenant);
    return outcome;
  }

  async function fire(tick: Tick): Promise<FiringOutcome> {
    const schedule = await schedules.get(tick.tenant, tick.name);
    if (!schedule) {
      // Deleted as this tick came: its job scheduler goes too, if it is still there.
      if (!tick.trigger) await schedules.disarm(tick.tenant, tick.name);
      return 'gone';
    }
    if (schedule.paused && !tick.trigger) return 'paused';
    const runId = scheduleRunId(
      tick.tenant,
      tick.name,
      tick.at,
      tick.trigger ? 'trigger' : 'tick',
      schedule.sessionId,
    );
    if (!tick.trigger && schedule.catchUp === 'none' && Date.now() - tick.at > options.catchUpGraceMs) {
      await schedules.skipped(tick.tenant, tick.name);
      return 'skipped_missed';
    }
    if (!(await settleOverlap(tick, schedule, runId))) return 'skipped_overlap';
    const { run, created } = await submit(tick, schedule, runId);
    await schedules.fired(tick.tenant, tick.name, run.id, tick.at);
    if (!created) return 'duplicate';
    await dispatch(tick, run.id);
    return 'fired';
  }

  /** False when the tick is skipped for a live last run; cancels it first for `cancel_previous`. */
  async function settleOverlap(tick: Tick, schedule: ScheduleRecord, runId: string): Promise<boolean> {
    if (schedule.overlap === 'enqueue') return true;
    const { lastRunId } = await schedules.state(tick.tenant, tick.name);
    // This tick's own run (a job taken again): submitted again, which answers it.
    if (lastRunId === undefined || lastRunId === runId) return true;
    const last = await options.runs.store.getRecord(lastRunId);
    if (!last || last.tenant !== tick.tenant || TERMINAL_STATUSES.includes(last.status)) return true;
    if (schedule.overlap === 'cancel_previous') {
      await cancel(tick.tenant, last);
      return true;
    }
    await schedules.skipped(tick.tenant, tick.name);
    await announce(tick, last.id, {
      type: 'schedule.skipped',
      data: {
        scheduleId: scheduleId(tick.name),
        name: tick.name,
        tickAt: new Date(tick.at).toISOString(),
        reason: 'overlap',
      },
    });
    return false;
  }

  async function cancel(tenant: string, run: RunRecord): Promise<void> {
    try {
      await options.runs.cancel(tenant, run.id);
    } catch (error) {
      // Ended meanwhile: nothing to cancel.
      if (!(error instanceof QueueError && error.code === 'ERR_RUN_FINISHED')) throw error;
    }
  }

  /** Submits the run, `schedule.fired` on its log in the step that creates it. */
  function submit(tick: Tick, schedule: ScheduleRecord, runId: string) {
    const next: RunEventInput = {
      type: 'schedule.fired',
      data: {
        scheduleId: scheduleId(tick.name),
        name: tick.name,
        tickAt: new Date(tick.at).toISOString(),
        ...(tick.trigger ? { trigger: true } : {}),
      },
    };
    const link = { scheduleId: scheduleId(tick.name), runId, next };
    if (schedule.sessionId === undefined) return options.runs.submit(tick.tenant, schedule.spec, link);
    return options.sessions.submit(
      tick.tenant,
      schedule.sessionId,
      { ...schedule.spec, multitask: 'enqueue' },
      link,
    );
  }

  /** Appends a schedule's event to a run's log (not once it has ended) and records its webhook deliveries. */
  async function announce(tick: Tick, runId: string, event: RunEventInput): Promise<void> {
    if (await options.runs.store.append(runId, event)) await dispatch(tick, runId);
  }

  /** Records the webhook deliveries of the run's new events (else its next claim, or the sweep, does). */
  async function dispatch(tick: Tick, runId: string): Promise<void> {
    await options.webhooks.dispatch(runId, tick.tenant).catch((error: unknown) => {
      log.warn({ err: error, runId }, 'could not record the webhook deliveries; the sweep will');
    });
  }

  return { process };
}

/** The tick a job is for: a trigger's own time, or the tick's time in the job scheduler's job id. */
function tickOf(job: Job<ScheduleJobData>): Tick {
  const { tenant, name, triggerAt } = job.data;
  if (triggerAt !== undefined) return { tenant, name, at: triggerAt, trigger: true };
  const id = job.id ?? '';
  const at = Number(id.slice(id.lastIndexOf(':') + 1));
  return { tenant, name, at: Number.isSafeInteger(at) && at > 0 ? at : job.timestamp, trigger: false };
}
