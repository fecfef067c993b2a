import { createHash } from 'node:crypto';
import { runIdAt, SCHEDULE_DEFAULTS, type ScheduleCatchUp, type ScheduleOverlap } from '@tether/protocol';
import { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import { SCHEDULE_QUEUE_NAME, type TetherKeys } from '../redis/keys.js';
import type { StoredBody } from '../runs/records.js';
import * as scripts from './commands/scripts.js';

/**
 * A tenant's schedules: the records in one hash under the tenant's hash tag (`ScheduleKeys`), and
 * per schedule one BullMQ job scheduler in the schedules queue (prefix `keys.scheduleQueuePrefix`,
 * a hash tag of its own). The job scheduler makes one job per tick, with the id
 * `repeat:<scheduler id>:<tick ms>`, and the next tick's job as a worker takes this one: so ticks
 * are never doubled by the number of processes, and a tick missed while no worker ran is one job
 * waiting when the first starts. A worker takes the job and submits the run (apps/worker,
 * `schedules/fire.ts`) with an id made from the tick ({@link scheduleRunId}): a job taken again
 * after its worker died makes no second run.
 */

/** A schedule as stored (times in epoch ms; the run's body as its spec, MCP secrets sealed). */
export interface ScheduleRecord {
  name: string;
  cron?: string | undefined;
  every?: string | undefined;
  timezone: string;
  overlap: ScheduleOverlap;
  catchUp: ScheduleCatchUp;
  sessionId?: string | undefined;
  paused: boolean;
  /** The run each tick submits, as `runSpec` made it at creation. */
  spec: StoredBody;
  createdAt: number;
  updatedAt: number;
}

/** What the firings wrote of a schedule (epoch ms). */
export interface ScheduleState {
  lastRunId?: string | undefined;
  lastRunAt?: number | undefined;
  lastSkippedAt?: number | undefined;
}

/** The data of a tick's (or a trigger's) job. */
export interface ScheduleJobData {
  tenant: string;
  name: string;
  /** A trigger (`POST /v1/schedules/:name/trigger`): its own time, in place of a tick. */
  triggerAt?: number | undefined;
}

export interface ScheduleStoreOptions {
  redis: RedisClient;
  /** The schedules queue's connection (BullMQ defines its scripts on it). Default `redis`. */
  queueConnection?: RedisClient;
  keys: TetherKeys;
  /** Schedules one tenant may have. Default `SCHEDULE_DEFAULTS.maxSchedules`. */
  maxSchedules?: number;
  /** Attempts of a tick's job (a failed submit is tried again, with backoff). Default 5. */
  attempts?: number;
}

/** The prefix of a schedule's id, which its runs carry as `scheduleId`. */
export const SCHEDULE_ID_PREFIX = 'sch_';

/** A schedule's id: `sch_` and its name (unique within its tenant, as runs are listed by tenant). */
export function scheduleId(name: string): string {
  return `${SCHEDULE_ID_PREFIX}${name}`;
}

/** The id of a schedule's job scheduler: names hold no `.`, so the last one splits the two. */
export function schedulerId(tenant: string, name: string): string {
  return `${tenant}.${name}`;
}

/**
 * The id of the run a schedule's tick (or trigger) makes: the tick's time, and 16 characters of
 * the SHA-256 of the tenant, name, time and kind. The same tick always gives the same id.
 */
export function scheduleRunId(
  tenant: string,
  name: string,
  tickAt: number,
  kind: 'tick' | 'trigger',
  sessionId?: string,
): string {
  const digest = createHash('sha256').update(`${tenant}\0${name}\0${tickAt}\0${kind}`).digest();
  return runIdAt(tickAt, digest, sessionId);
}

/**
 * A schedule's repeat options for BullMQ: a pattern and its zone, or an interval (ms). BullMQ
 * fires a new `every` scheduler at once; a schedule's first tick is one interval after it is
 * added, changed or resumed instead (`startDate`), as a pattern's is its next time.
 */
export function repeatOptions(
  schedule: Pick<ScheduleRecord, 'cron' | 'every' | 'timezone'>,
  everyMs: number,
  now = Date.now(),
) {
  return schedule.cron !== undefined
    ? { pattern: schedule.cron, tz: schedule.timezone }
    : { every: everyMs, startDate: now + everyMs };
}

export class ScheduleStore {
  readonly redis: RedisClient;
  readonly keys: TetherKeys;
  readonly maxSchedules: number;
  readonly #attempts: number;
  readonly #queueConnection: RedisClient;
  #queue: Queue<ScheduleJobData> | undefined;

  constructor(options: ScheduleStoreOptions) {
    this.redis = options.redis;
    this.keys = options.keys;
    this.#queueConnection = options.queueConnection ?? options.redis;
    this.maxSchedules = options.maxSchedules ?? SCHEDULE_DEFAULTS.maxSchedules;
    this.#attempts = options.attempts ?? 5;
    for (const [name, value] of [
      ['maxSchedules', this.maxSchedules],
      ['attempts', this.#attempts],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`ScheduleStore option "${name}" must be a positive integer, got ${value}`);
      }
    }
  }

  /** The schedules queue (opened on first use). */
  get queue(): Queue<ScheduleJobData> {
    this.#queue ??= new Queue<ScheduleJobData>(SCHEDULE_QUEUE_NAME, {
      connection: this.#queueConnection,
      prefix: this.keys.scheduleQueuePrefix,
      streams: { events: { maxLen: 100 } },
    });
    return this.#queue;
  }

  /** Adds a schedule: `exists` when the name is taken, `limit` when the tenant has `maxSchedules`. */
  async create(tenant: string, schedule: ScheduleRecord): Promise<'ok' | 'exists' | 'limit'> {
    const reply = await this.#save(tenant, schedule, 'create');
    return reply === 'full' ? 'limit' : reply === 'missing' ? 'exists' : reply;
  }

  /** Replaces a schedule that exists (its `createdAt` kept by the caller); false when it does not. */
  async replace(tenant: string, schedule: ScheduleRecord): Promise<boolean> {
    return (await this.#save(tenant, schedule, 'replace')) === 'ok';
  }

  #save(tenant: string, schedule: ScheduleRecord, mode: 'create' | 'replace') {
    return scripts.saveSchedule.run(this.redis, {
      keys: { index: this.keys.schedules(tenant).index },
      args: { name: schedule.name, schedule: JSON.stringify(schedule), mode, max: this.maxSchedules },
    });
  }

  /** One schedule of the tenant, or undefined. */
  async get(tenant: string, name: string): Promise<ScheduleRecord | undefined> {
    const json = await this.redis.hget(this.keys.schedules(tenant).index, name);
    return json === null ? undefined : (JSON.parse(json) as ScheduleRecord);
  }

  /** The tenant's schedules, by name. */
  async list(tenant: string): Promise<ScheduleRecord[]> {
    const all = await this.redis.hgetall(this.keys.schedules(tenant).index);
    return Object.values(all)
      .map((json) => JSON.parse(json) as ScheduleRecord)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Removes a schedule, its job scheduler and what its firings wrote; false when it did not exist. */
  async delete(tenant: string, name: string): Promise<boolean> {
    await this.disarm(tenant, name);
    const keys = this.keys.schedules(tenant);
    // One slot (the tenant's tag): one round trip.
    const [[, removed] = []] =
      (await this.redis.multi().hdel(keys.index, name).del(keys.state(name), keys.runs(name)).exec()) ?? [];
    return removed === 1;
  }

  /**
   * Starts (or changes) the schedule's job scheduler: BullMQ's upsert replaces the timing and
   * the next tick's job. Its jobs are removed as they end, so a scheduler removed and added again
   * never finds a finished job under the id of its next tick (BullMQ issue #3063).
   */
  async arm(tenant: string, schedule: ScheduleRecord, everyMs: number): Promise<void> {
    await this.queue.upsertJobScheduler(
      schedulerId(tenant, schedule.name),
      repeatOptions(schedule, everyMs),
      {
        name: 'tick',
        data: { tenant, name: schedule.name },
        opts: {
          attempts: this.#attempts,
          backoff: { type: 'exponential', delay: 1_000 },
          removeOnComplete: true,
          removeOnFail: true,
        },
      },
    );
  }

  /** Stops the schedule's job scheduler, and removes its next tick's job. */
  async disarm(tenant: string, name: string): Promise<void> {
    await this.queue.removeJobScheduler(schedulerId(tenant, name));
  }

  /** When the schedule's next tick is due (epoch ms), or undefined when it has no job scheduler. */
  async next(tenant: string, name: string): Promise<number | undefined> {
    return (await this.queue.getJobScheduler(schedulerId(tenant, name)))?.next ?? undefined;
  }

  /** Queues a firing now, outside the ticks: the run's id, made from `at`. */
  async trigger(tenant: string, schedule: ScheduleRecord, at = Date.now()): Promise<string> {
    const runId = scheduleRunId(tenant, schedule.name, at, 'trigger', schedule.sessionId);
    // BullMQ refuses `:` in a job id (a tenant may hold one): the run id names the firing.
    await this.queue.add(
      'trigger',
      { tenant, name: schedule.name, triggerAt: at },
      { jobId: `trigger.${runId}`, attempts: this.#attempts, removeOnComplete: true, removeOnFail: true },
    );
    return runId;
  }

  /** What the firings wrote of the schedule. */
  async state(tenant: string, name: string): Promise<ScheduleState> {
    const hash = await this.redis.hgetall(this.keys.schedules(tenant).state(name));
    const number = (value: string | undefined) => (value === undefined ? undefined : Number(value));
    return {
      lastRunId: hash.lastRunId,
      lastRunAt: number(hash.lastRunAt),
      lastSkippedAt: number(hash.lastSkippedAt),
    };
  }

  /** A firing made run `runId` for its tick: listed under the schedule, and its last run. */
  async fired(tenant: string, name: string, runId: string, tickAt: number): Promise<void> {
    const keys = this.keys.schedules(tenant);
    await this.redis
      .multi()
      .zadd(keys.runs(name), tickAt, runId)
      .hset(keys.state(name), 'lastRunId', runId, 'lastRunAt', String(Date.now()))
      .exec();
  }

  /** A tick that made no run (its last run live, or missed while no worker ran). */
  async skipped(tenant: string, name: string): Promise<void> {
    await this.redis.hset(this.keys.schedules(tenant).state(name), 'lastSkippedAt', String(Date.now()));
  }

  /** The ids of the schedule's runs, newest tick first, `limit` after `cursor` (an offset). */
  async runIds(
    tenant: string,
    name: string,
    options: { cursor?: number | undefined; limit: number },
  ): Promise<{ ids: string[]; nextCursor: number | null }> {
    const start = options.cursor ?? 0;
    const ids = await this.redis.zrevrange(
      this.keys.schedules(tenant).runs(name),
      start,
      start + options.limit,
    );
    const more = ids.length > options.limit;
    return { ids: ids.slice(0, options.limit), nextCursor: more ? start + options.limit : null };
  }

  async close(): Promise<void> {
    await this.#queue?.close();
  }
}
