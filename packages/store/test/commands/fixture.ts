import { newChildRunId, newId, newSessionRunId } from '@tether/protocol';
import { testRedisUrl, uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, expect } from 'vitest';
import { createKeys, type RunKeys, type TetherKeys } from '../../src/redis/index.js';
import { finalizeRun } from '../../src/runs/commands/scripts.js';

/** A connection for one test file, closed after it. */
export function useRedis(): Redis {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  afterAll(async () => {
    await redis.quit();
  });
  return redis;
}

/** An event as a script wrote it in the log: its stream id, type and parsed data. */
export interface LoggedEvent {
  id: string;
  type: string;
  data: unknown;
}

export const MAXLEN = 1_000;
/** The id of the test's question: its request's and its waitpoint's. */
export const QUESTION_ID = 'clr_test';

/** A kind of request a waitpoint holds. */
export type RequestKind = 'question' | 'tool_output' | 'child';

/** The event `openWaitpoint` appends for each request of a kind: its data is the request. */
export const REQUESTED: Record<RequestKind, string> = {
  question: 'clarify.requested',
  tool_output: 'tool.requested',
  child: 'child.started',
};

/**
 * The request `seedWaitpoint` records unless given: the data of its kind's event, as the protocol
 * has it (the integration suites' teardown checks every logged event against it).
 */
export function requestOf(kind: RequestKind, id: string, index: number, deadline: number): string {
  const expiresAt = new Date(deadline).toISOString();
  switch (kind) {
    case 'question':
      return JSON.stringify({ requestId: id, question: 'Which one?', choices: [], expiresAt });
    case 'tool_output':
      return JSON.stringify({
        requestId: id,
        callId: `call_${id}`,
        name: 'lookup',
        arguments: {},
        expiresAt,
      });
    case 'child':
      return JSON.stringify({ childRunId: id, index, goal: `goal ${index}` });
  }
}

/** A request of a seeded waitpoint: its id, state (`pending` unless given), request and result. */
export interface SeededRequest {
  id: string;
  state?: string;
  /**
   * The request: a JSON text, {@link requestOf} unless given. Logged as its event's data, the
   * event's id in `e:<id>`, as `openWaitpoint` records it; in `q:<id>` when `moved`.
   */
  request?: string;
  /** A request of a run moved from the release before by `migrateWaitpoint`: its body in `q:<id>`, no event. */
  moved?: boolean;
  /** How it was resolved (its value in the results hash), when it was. */
  result?: string;
}

/**
 * A waitpoint to seed: its id, the kind of its requests, deadline (epoch ms) and requests (`pending`
 * counts those pending).
 */
export interface SeededWaitpoint {
  id: string;
  kind: RequestKind;
  deadline: number;
  requests: readonly SeededRequest[];
  /** Other fields (earlier requests' states, answer tokens). */
  extra?: Record<string, string>;
}

/** A waitpoint on the question `QUESTION_ID` (its id too), due at `deadline` (epoch ms). */
export function questionWaitpoint(deadline: number, state = 'pending', result?: string): SeededWaitpoint {
  const request: SeededRequest = { id: QUESTION_ID, state };
  if (result !== undefined) request.result = result;
  return { id: QUESTION_ID, kind: 'question', deadline, requests: [request] };
}

/**
 * One run's keys under a prefix of their own (or, for a crew child, its parent's), and what a
 * test of a script needs around them: seeding the record and the waitpoint, reading the log,
 * watching a channel, and a snapshot of every key to show that a refusal changed nothing.
 */
/**
 * How `RunFixture.finalize` ends a run. Every field has a default: a completed run with an output,
 * no worker token (the API's way), no crew parent, no events, the retention an hour.
 */
export interface FinalizeEnd {
  status?: 'completed' | 'failed' | 'cancelled';
  /** The end event's data; by default what the status's event would carry. */
  eventData?: string;
  retention?: number;
  token?: string;
  checkpoint?: string;
  /** Record fields, as pairs; by default `output: done` for a completed run, none otherwise. */
  fields?: string[];
  events?: string[];
  turn?: string[];
  /** The crew parent the caller knows of ('' for none). */
  parentId?: string;
  childStatus?: string;
  childSummary?: string;
  childUsage?: string;
}

const END_DATA = {
  completed: '{"output":"done"}',
  failed: '{"error":{"code":"ERR_X","message":"broke"}}',
  cancelled: '{}',
} as const;

export class RunFixture {
  readonly redis: Redis;
  readonly runId: string;
  /** The run's session, when it was made as a session's run. */
  readonly sessionId: string | undefined;
  /** The run's crew parent, when it was made as a child. */
  readonly parent: RunFixture | undefined;
  readonly keys: RunKeys;
  readonly cancelChannel: string;
  /** The arguments every event-appending script opens with. */
  readonly base: { channel: string; maxlen: number; runId: string };
  readonly #tether: TetherKeys;
  /** The id of the last request event `seedWaitpoint` logged. */
  #seededUpTo: string | undefined;

  constructor(redis: Redis, options: { session?: boolean; parent?: RunFixture } = {}) {
    this.redis = redis;
    this.parent = options.parent;
    this.sessionId = options.session ? newId('ses') : undefined;
    this.runId = this.parent
      ? newChildRunId(this.parent.runId)
      : this.sessionId
        ? newSessionRunId(this.sessionId)
        : 'run_test';
    this.#tether = this.parent ? this.parent.#tether : createKeys(uniquePrefix('lua'));
    this.keys = this.#tether.run(this.runId);
    this.cancelChannel = this.#tether.cancelChannel;
    this.base = { channel: this.keys.eventsChannel, maxlen: MAXLEN, runId: this.runId };
  }

  /** The run's keys with its session's and its crew parent's under the names the scripts give them. */
  get scriptKeys() {
    const session = this.keys.session;
    // No crew parent: keys in the run's slot that nothing writes.
    const parent = this.parent?.keys;
    return {
      ...this.keys,
      sessionRecord: session.record,
      sessionRuns: session.runs,
      sessionQueue: session.queue,
      transcript: session.transcript,
      parentRecord: parent?.record ?? this.keys.unused,
      parentEvents: parent?.events ?? this.keys.unused,
      parentWaitpoint: parent?.waitpoint ?? this.keys.unused,
      parentResults: parent?.waitpointResults ?? this.keys.unused,
    };
  }

  async seed(fields: Record<string, string | number>): Promise<void> {
    await this.redis.hset(this.keys.record, fields);
  }

  /**
   * The waitpoint the run waits on, as `openWaitpoint` records it: `id`, `kind`, `deadline`,
   * `pending`, and per request `s:` and `e:` (the id of its event, appended to the log here, whose
   * data is the request; `q:`, the request itself, for one `moved`), and the results in the
   * results hash. Returns the events it logged.
   */
  async seedWaitpoint(waitpoint: SeededWaitpoint): Promise<LoggedEvent[]> {
    const { id, kind, deadline, requests } = waitpoint;
    const pending = requests.filter((r) => (r.state ?? 'pending') === 'pending').length;
    const fields: Record<string, string | number> = { ...waitpoint.extra, id, kind, deadline, pending };
    const results: Record<string, string> = {};
    const logged: LoggedEvent[] = [];
    for (const [index, r] of requests.entries()) {
      const request = r.request ?? requestOf(kind, r.id, index, deadline);
      fields[`s:${r.id}`] = r.state ?? 'pending';
      if (r.moved) {
        fields[`q:${r.id}`] = request;
      } else {
        const eventId = await this.redis.xadd(this.keys.events, '*', 't', REQUESTED[kind], 'd', request);
        if (eventId === null) throw new Error('XADD added no event');
        fields[`e:${r.id}`] = eventId;
        logged.push({ id: eventId, type: REQUESTED[kind], data: JSON.parse(request) });
      }
      if (r.result !== undefined) results[r.id] = r.result;
    }
    await this.redis.hset(this.keys.waitpoint, fields);
    if (Object.keys(results).length > 0) await this.redis.hset(this.keys.waitpointResults, results);
    const last = logged.at(-1);
    if (last) this.#seededUpTo = last.id;
    return logged;
  }

  /** Ends the run through `finalizeRun`, as a worker (with a token) or the API's cancel (without) does. */
  finalize(end: FinalizeEnd = {}) {
    const status = end.status ?? 'completed';
    const completed = status === 'completed';
    const fields = end.fields ?? (completed ? ['output', 'done'] : []);
    return finalizeRun.run(this.redis, {
      keys: this.scriptKeys,
      args: {
        ...this.base,
        status,
        eventType: `run.${status}`,
        eventData: end.eventData ?? END_DATA[status],
        retention: end.retention ?? 3_600,
        token: end.token ?? '',
        checkpoint: end.checkpoint ?? '',
        sessionTtl: 600,
        parentId: end.parentId ?? '',
        parentChannel: this.parent?.keys.eventsChannel ?? '',
        childStatus: end.childStatus ?? status,
        childSummary: end.childSummary ?? (completed ? 'done' : ''),
        childUsage: end.childUsage ?? '{}',
        turnCount: end.turn?.length ?? 0,
        fieldCount: fields.length / 2,
        pairs: [...fields, ...(end.turn ?? []), ...(end.events ?? [])],
      },
    });
  }

  record(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.record);
  }

  /** The waitpoint hash, every field. */
  waitpoint(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.waitpoint);
  }

  /** The waitpoint's results hash (request id → result), every field. */
  results(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.waitpointResults);
  }

  /** The log's events, all of them, or those after the event `after` (a stream id). */
  async events(after?: string): Promise<LoggedEvent[]> {
    const entries = await this.redis.xrange(this.keys.events, after === undefined ? '-' : `(${after}`, '+');
    return entries.map(([id, fields]) => ({
      id,
      type: fields[1] as string,
      data: JSON.parse(fields[3] as string),
    }));
  }

  /** The log's events after the request events `seedWaitpoint` logged last (all, when it logged none). */
  appended(): Promise<LoggedEvent[]> {
    return this.events(this.#seededUpTo);
  }

  /** Appends `count` events to the log as a script would have. */
  async fillLog(count: number): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (let i = 0; i < count; i++)
      pipeline.xadd(this.keys.events, '*', 't', 'message.delta', 'd', '{"text":"x"}');
    await pipeline.exec();
  }

  /**
   * Runs `action` while subscribed to `channel`: returns its result and the
   * messages published meanwhile. A PING on the subscriber after the action
   * comes back after every message published before it, so none is missed.
   */
  async published<T>(channel: string, action: () => Promise<T>): Promise<{ result: T; messages: string[] }> {
    const subscriber = this.redis.duplicate();
    const messages: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => messages.push(message));
    try {
      await subscriber.subscribe(channel);
      const result = await action();
      await subscriber.ping();
      return { result, messages };
    } finally {
      subscriber.disconnect();
    }
  }

  /**
   * Every key of the run (its waitpoint, the waitpoint's results and its session's included, not
   * the legacy keys only a migration reads), and its crew parent's: its serialized value and TTL.
   */
  async state(): Promise<Record<string, [string | null, number]>> {
    const snapshot = await this.#state();
    return this.parent ? { ...(await this.parent.#state()), ...snapshot } : snapshot;
  }

  async #state(): Promise<Record<string, [string | null, number]>> {
    const { eventsChannel: _channel, legacy: _legacy, session, batch, ...keys } = this.keys;
    const { runsChannel: _runs, ...sessionKeys } = session;
    const names: unknown[] = [...Object.values(keys), ...Object.values(sessionKeys), ...Object.values(batch)];
    // A key name of RunKeys that is not a string (a group such as `legacy`) must be skipped above.
    if (
      !names.every((name) => typeof name === 'string') ||
      !names.includes(this.keys.waitpoint) ||
      !names.includes(this.keys.waitpointResults)
    ) {
      throw new Error(`the snapshot's key names are wrong: ${JSON.stringify(names)}`);
    }
    const snapshot: Record<string, [string | null, number]> = {};
    for (const name of names as string[]) {
      // A hash too large for the compact encoding dumps its fields in an order that reads may change
      // (Redis rehashes a step at a time): its sorted fields stand for it.
      if ((await this.redis.type(name)) === 'hash') {
        const fields = Object.entries(await this.redis.hgetall(name)).sort(([a], [b]) => (a < b ? -1 : 1));
        snapshot[name] = [JSON.stringify(fields), await this.redis.ttl(name)];
        continue;
      }
      const dump = await this.redis.dumpBuffer(name);
      snapshot[name] = [dump ? dump.toString('hex') : null, await this.redis.ttl(name)];
    }
    return snapshot;
  }

  /** Runs `act` (a script refusing), checks that no key of the run changed, and returns what it answered. */
  async unchanged<T>(act: () => Promise<T>): Promise<T> {
    const before = await this.state();
    const result = await act();
    expect(await this.state()).toEqual(before);
    return result;
  }

  /**
   * Whether the log is stored at its real size: true when rewriting it would
   * not make it smaller (Redis preallocates 4 KB for a stream's newest node).
   */
  async logIsCompact(): Promise<boolean> {
    const before = await this.redis.memory('USAGE', this.keys.events, 'SAMPLES', 0);
    await this.redis.restore(
      this.keys.events,
      0,
      (await this.redis.dumpBuffer(this.keys.events)) as Buffer,
      'REPLACE',
    );
    const after = await this.redis.memory('USAGE', this.keys.events, 'SAMPLES', 0);
    expect(after).not.toBeNull();
    return before === after;
  }
}

/** Parses a message published on a run's events channel. */
export function parseMessage(message: string): { id: string; runId: string; type: string; data: unknown } {
  return JSON.parse(message);
}
