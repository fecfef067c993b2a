import type {
  CreateScheduleBody,
  Schedule,
  ScheduleList,
  ScheduleRunPage,
  ScheduleTriggerResponse,
  UpdateScheduleBody,
} from '@tether/protocol';
import { invalidOption, isRecord, TetherProtocolError } from './errors.js';
import type { RequestOptions, RequestSpec } from './request.js';

/** What the schedules API needs of the client that owns it. */
export interface ScheduleTransport {
  /** One request under the client's retry policy, its JSON body parsed (undefined when empty). */
  json(spec: RequestSpec): Promise<unknown>;
}

/**
 * `client.schedules`: the tenant's schedules, each a run submitted on a cron pattern or at an
 * interval.
 *
 * ```ts
 * await client.schedules.create({ name: 'nightly', cron: '0 3 * * *', timezone: 'Europe/Paris', run: { input: 'Triage the new issues' } });
 * const { data } = await client.schedules.runs('nightly');
 * ```
 */
export class TetherSchedules {
  readonly #transport: ScheduleTransport;

  constructor(transport: ScheduleTransport) {
    this.#transport = transport;
  }

  /** `POST /v1/schedules`: the schedule, its job scheduler started. */
  async create(body: CreateScheduleBody, options: RequestOptions = {}): Promise<Schedule> {
    // A retry after a lost answer would be 409 ERR_SCHEDULE_EXISTS: never retried once sent.
    return schedule(await this.#send('POST', '/v1/schedules', options, false, body), 'POST /v1/schedules');
  }

  /** `GET /v1/schedules`: every schedule of the tenant, by name. */
  async list(options: RequestOptions = {}): Promise<ScheduleList> {
    const result = await this.#send('GET', '/v1/schedules', options, true);
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as ScheduleList;
    throw new TetherProtocolError('GET /v1/schedules answered without a data array');
  }

  /** `GET /v1/schedules/:name` (`TetherNotFoundError` when there is none). */
  async get(name: string, options: RequestOptions = {}): Promise<Schedule> {
    const path = schedulePath(name);
    return schedule(await this.#send('GET', path, options, true), `GET ${path}`);
  }

  /** `PATCH /v1/schedules/:name`. */
  async update(name: string, body: UpdateScheduleBody, options: RequestOptions = {}): Promise<Schedule> {
    const path = schedulePath(name);
    return schedule(await this.#send('PATCH', path, options, true, body), `PATCH ${path}`);
  }

  /** `DELETE /v1/schedules/:name`; its runs stay. */
  async delete(name: string, options: RequestOptions = {}): Promise<void> {
    await this.#send('DELETE', schedulePath(name), options, false);
  }

  /** `POST /v1/schedules/:name/pause`. */
  async pause(name: string, options: RequestOptions = {}): Promise<Schedule> {
    const path = `${schedulePath(name)}/pause`;
    return schedule(await this.#send('POST', path, options, true), `POST ${path}`);
  }

  /** `POST /v1/schedules/:name/resume`. */
  async resume(name: string, options: RequestOptions = {}): Promise<Schedule> {
    const path = `${schedulePath(name)}/resume`;
    return schedule(await this.#send('POST', path, options, true), `POST ${path}`);
  }

  /** `POST /v1/schedules/:name/trigger`: the id the run will have once a worker makes it. */
  async trigger(name: string, options: RequestOptions = {}): Promise<ScheduleTriggerResponse> {
    const path = `${schedulePath(name)}/trigger`;
    // Sent twice, it would fire twice: never retried once sent.
    const result = await this.#send('POST', path, options, false);
    if (isRecord(result) && typeof result.runId === 'string')
      return result as unknown as ScheduleTriggerResponse;
    throw new TetherProtocolError(`POST ${path} answered without a runId`);
  }

  /** `GET /v1/schedules/:name/runs`: newest tick first; pass `nextCursor` for the next page. */
  async runs(
    name: string,
    page: { limit?: number | undefined; cursor?: string | undefined } = {},
    options: RequestOptions = {},
  ): Promise<ScheduleRunPage> {
    const path = `${schedulePath(name)}/runs`;
    const result = await this.#transport.json({
      method: 'GET',
      path,
      query: { limit: page.limit, cursor: page.cursor },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as ScheduleRunPage;
    throw new TetherProtocolError(`GET ${path} answered without a data array`);
  }

  #send(
    method: RequestSpec['method'],
    path: string,
    options: RequestOptions,
    idempotent: boolean,
    body?: unknown,
  ): Promise<unknown> {
    return this.#transport.json({
      method,
      path,
      ...(body === undefined ? {} : { body }),
      signal: options.signal,
      idempotent,
    });
  }
}

function schedulePath(name: string): string {
  if (typeof name !== 'string' || name === '')
    throw invalidOption('schedule name must be a non-empty string');
  return `/v1/schedules/${encodeURIComponent(name)}`;
}

function schedule(result: unknown, what: string): Schedule {
  if (isRecord(result) && typeof result.name === 'string' && typeof result.id === 'string') {
    return result as unknown as Schedule;
  }
  throw new TetherProtocolError(`${what} answered without a schedule`);
}
