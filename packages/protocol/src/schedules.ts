import { type Static, Type } from '@sinclair/typebox';
import { RunStatusSchema } from './events.js';
import { EXPECTED } from './expected.js';
import { CreateRunBodySchema, RunSchema } from './http.js';

/**
 * Schedules (`/v1/schedules`): a tenant's run that starts on a cron pattern or every interval.
 * BullMQ's job schedulers make one job per tick; a worker takes it and submits the run
 * (docs/architecture.md, "Schedules").
 */

/** What a schedule does when a tick comes while its last run is still live. */
export const SCHEDULE_OVERLAPS = ['skip', 'enqueue', 'cancel_previous'] as const;
export type ScheduleOverlap = (typeof SCHEDULE_OVERLAPS)[number];

/** What a tick missed while no worker ran does: fire once when one starts (`one`), or nothing (`none`). */
export const SCHEDULE_CATCH_UPS = ['one', 'none'] as const;
export type ScheduleCatchUp = (typeof SCHEDULE_CATCH_UPS)[number];

/** Bounds of the schedule routes; the API enforces them. */
export const SCHEDULE_LIMITS = {
  /** A name: a lowercase letter or digit, then lowercase letters, digits, `-` and `_`. */
  nameMaxChars: 63,
  /** Characters of a cron pattern. */
  cronMaxChars: 128,
  /** Characters of a time zone's name. */
  timezoneMaxChars: 64,
  /** Runs one page of `GET /v1/schedules/:name/runs` returns. */
  pageMaxLimit: 100,
} as const;

/** Settings unless configured otherwise (`TETHER_TENANT_MAX_SCHEDULES`, `TETHER_SCHEDULE_*`). */
export const SCHEDULE_DEFAULTS = {
  /** Schedules one tenant may have. */
  maxSchedules: 100,
  /** The shortest time between two ticks of a schedule (ms): 1 minute. */
  minIntervalMs: 60_000,
  /** How late a tick may fire and still count as on time, for `catchUp: "none"` (ms). */
  catchUpGraceMs: 60_000,
} as const;

export const SCHEDULE_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';
export const ScheduleNameSchema = Type.String({
  pattern: SCHEDULE_NAME_PATTERN,
  maxLength: SCHEDULE_LIMITS.nameMaxChars,
  [EXPECTED]: 'a schedule name (1 to 63 lowercase letters, digits, - and _, starting with a letter or digit)',
});

/** A duration: a whole number and a unit, `s`, `m`, `h` or `d` (`90s`, `15m`, `1d`). */
export const SCHEDULE_EVERY_PATTERN = '^[1-9][0-9]{0,6}[smhd]$';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The milliseconds of an `every` duration (`15m` → 900,000), or undefined when it is not one. */
export function parseEvery(every: string): number | undefined {
  if (!new RegExp(SCHEDULE_EVERY_PATTERN).test(every)) return undefined;
  const unit = every.slice(-1) as keyof typeof UNIT_MS;
  return Number(every.slice(0, -1)) * UNIT_MS[unit];
}

const ScheduleFields = {
  cron: Type.String({
    minLength: 1,
    maxLength: SCHEDULE_LIMITS.cronMaxChars,
    description:
      'A cron pattern (5 fields, or 6 with leading seconds), read in `timezone`. Exactly one of `cron` and `every`.',
  }),
  every: Type.String({
    pattern: SCHEDULE_EVERY_PATTERN,
    [EXPECTED]: 'a duration such as 90s, 15m, 2h or 1d',
    description: 'An interval: a whole number and s, m, h or d. Exactly one of `cron` and `every`.',
  }),
  timezone: Type.String({
    minLength: 1,
    maxLength: SCHEDULE_LIMITS.timezoneMaxChars,
    description: 'The IANA time zone `cron` is read in (default `UTC`).',
  }),
  overlap: Type.Union(
    SCHEDULE_OVERLAPS.map((overlap) => Type.Literal(overlap)),
    {
      description:
        'When a tick comes while the last run is live: `skip` it (the default), `enqueue` a run anyway, or `cancel_previous` (cancel the live run, then start).',
    },
  ),
  catchUp: Type.Union(
    SCHEDULE_CATCH_UPS.map((catchUp) => Type.Literal(catchUp)),
    {
      description:
        'A tick missed while no worker ran: `one` (the default) fires once when a worker starts; `none` skips it.',
    },
  ),
  sessionId: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'Each firing is a message of this session (a run of it, `multitask: "enqueue"`).',
  }),
};

/** `POST /v1/schedules` body. */
export const CreateScheduleBodySchema = Type.Object(
  {
    name: ScheduleNameSchema,
    cron: Type.Optional(ScheduleFields.cron),
    every: Type.Optional(ScheduleFields.every),
    timezone: Type.Optional(ScheduleFields.timezone),
    overlap: Type.Optional(ScheduleFields.overlap),
    catchUp: Type.Optional(ScheduleFields.catchUp),
    sessionId: Type.Optional(ScheduleFields.sessionId),
    /** The run each tick submits: a `POST /v1/runs` body, checked as that route checks it. */
    run: CreateRunBodySchema,
  },
  { additionalProperties: false },
);
export type CreateScheduleBody = Static<typeof CreateScheduleBodySchema>;

/** `PATCH /v1/schedules/:name` body: any field but `name`; `cron` or `every` replaces the other. */
export const UpdateScheduleBodySchema = Type.Object(
  {
    cron: Type.Optional(ScheduleFields.cron),
    every: Type.Optional(ScheduleFields.every),
    timezone: Type.Optional(ScheduleFields.timezone),
    overlap: Type.Optional(ScheduleFields.overlap),
    catchUp: Type.Optional(ScheduleFields.catchUp),
    run: Type.Optional(CreateRunBodySchema),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateScheduleBody = Static<typeof UpdateScheduleBodySchema>;

/** A schedule as the API shows it. */
export const ScheduleSchema = Type.Object({
  /** `sch_` and the name: what each run it makes carries as `scheduleId`. */
  id: Type.String(),
  name: ScheduleNameSchema,
  cron: Type.Optional(Type.String()),
  every: Type.Optional(Type.String()),
  timezone: Type.String(),
  overlap: Type.Union(SCHEDULE_OVERLAPS.map((overlap) => Type.Literal(overlap))),
  catchUp: Type.Union(SCHEDULE_CATCH_UPS.map((catchUp) => Type.Literal(catchUp))),
  sessionId: Type.Optional(Type.String()),
  paused: Type.Boolean(),
  /** The run's body as submitted (its MCP servers' secrets not shown). */
  run: Type.Unknown(),
  /** When the next tick is due; null while paused. */
  nextRunAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  /** When its last run was made; null before the first. */
  lastRunAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastRunId: Type.Union([Type.String(), Type.Null()]),
  /** The status of its last run now; null before the first (or once the run's retention passed). */
  lastStatus: Type.Union([RunStatusSchema, Type.Null()]),
  /** When a tick was last skipped (overlap or catch-up); null if never. */
  lastSkippedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type Schedule = Static<typeof ScheduleSchema>;

/** `GET /v1/schedules`. */
export const ScheduleListSchema = Type.Object({ data: Type.Array(ScheduleSchema) });
export type ScheduleList = Static<typeof ScheduleListSchema>;

/** `GET /v1/schedules/:name/runs`: newest first, `nextCursor` for the page after. */
export const ScheduleRunPageSchema = Type.Object({
  data: Type.Array(RunSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type ScheduleRunPage = Static<typeof ScheduleRunPageSchema>;

/** `POST /v1/schedules/:name/trigger` 202 answer: the run the firing makes. */
export const ScheduleTriggerResponseSchema = Type.Object({ runId: Type.String() });
export type ScheduleTriggerResponse = Static<typeof ScheduleTriggerResponseSchema>;
