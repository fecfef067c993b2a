export {
  repeatOptions,
  SCHEDULE_ID_PREFIX,
  type ScheduleJobData,
  type ScheduleRecord,
  type ScheduleState,
  ScheduleStore,
  type ScheduleStoreOptions,
  scheduleId,
  scheduleRunId,
  schedulerId,
} from './schedule-store.js';
export {
  cronTicks,
  knownTimeZone,
  type ScheduleTiming,
  scheduleIntervalMs,
  timingProblem,
} from './schedule-timing.js';
