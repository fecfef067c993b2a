import { newChildRunId, newId, newSessionRunId } from '@tether/protocol';
import { testRedisUrl, uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, expect } from 'vitest';
import { createKeys, type RunKeys, type TetherKeys } from '../../src/index.js';

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

/** A request of a seeded waitpoint: its id, kind, state (`pending` unless given), request and result. */
export interface SeededRequest {
  id: string;
  kind: RequestKind;
  state?: string;
  /** The request (`q:<id>`): a JSON text, `{"requestId":<id>}` unless given. */
  request?: string;
  /** How it was resolved (`r:<id>`), when it was. */
  result?: string;
}

/** A waitpoint to seed: its id, deadline (epoch ms) and requests (`pending` counts those pending). */
export interface SeededWaitpoint {
  id: string;
  deadline: number;
  requests: readonly SeededRequest[];
  /** Other fields (earlier requests' states, answer tokens). */
  extra?: Record<string, string>;
  /** Its expiry (s), none unless given. */
  ttl?: number;
}

/** A waitpoint on the question `QUESTION_ID` (its id too), due at `deadline` (epoch ms). */
export function questionWaitpoint(deadline: number, state = 'pending', result?: string): SeededWaitpoint {
  const request: SeededRequest = { id: QUESTION_ID, kind: 'question', state };
  if (result !== undefined) request.result = result;
  return { id: QUESTION_ID, deadline, requests: [request] };
}

/**
 * One run's keys under a prefix of their own (or, for a crew child, its parent's), and what a
 * test of a script needs around them: seeding the record and the waitpoint, reading the log,
 * watching a channel, and a snapshot of every key to show that a refusal changed nothing.
 */
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
    };
  }

  async seed(fields: Record<string, string | number>): Promise<void> {
    await this.redis.hset(this.keys.record, fields);
  }

  /**
   * The waitpoint the run waits on, as `openWaitpoint` records it: `id`, `deadline`, `pending`,
   * `order`, and per request `k:`, `q:`, `s:` (and `r:` when resolved).
   */
  async seedWaitpoint(waitpoint: SeededWaitpoint): Promise<void> {
    const { id, deadline, requests } = waitpoint;
    const pending = requests.filter((r) => (r.state ?? 'pending') === 'pending').length;
    const fields: Record<string, string | number> = {
      ...waitpoint.extra,
      id,
      deadline,
      pending,
      order: requests.map((r) => r.id).join(' '),
    };
    for (const r of requests) {
      fields[`k:${r.id}`] = r.kind;
      fields[`q:${r.id}`] = r.request ?? JSON.stringify({ requestId: r.id });
      fields[`s:${r.id}`] = r.state ?? 'pending';
      if (r.result !== undefined) fields[`r:${r.id}`] = r.result;
    }
    await this.redis.hset(this.keys.waitpoint, fields);
    if (waitpoint.ttl !== undefined) await this.redis.expire(this.keys.waitpoint, waitpoint.ttl);
  }

  record(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.record);
  }

  /** The waitpoint hash, every field. */
  waitpoint(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.waitpoint);
  }

  async events(): Promise<LoggedEvent[]> {
    const entries = await this.redis.xrange(this.keys.events, '-', '+');
    return entries.map(([id, fields]) => ({
      id,
      type: fields[1] as string,
      data: JSON.parse(fields[3] as string),
    }));
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
   * Every key of the run (its waitpoint and its session's included, not the legacy keys only a
   * migration reads), and its crew parent's: its serialized value and TTL.
   */
  async state(): Promise<Record<string, [string | null, number]>> {
    const snapshot = await this.#state();
    return this.parent ? { ...(await this.parent.#state()), ...snapshot } : snapshot;
  }

  async #state(): Promise<Record<string, [string | null, number]>> {
    const { eventsChannel: _channel, legacy: _legacy, session, ...keys } = this.keys;
    const { runsChannel: _runs, ...sessionKeys } = session;
    const names: unknown[] = [...Object.values(keys), ...Object.values(sessionKeys)];
    // A key name of RunKeys that is not a string (a group such as `legacy`) must be skipped above.
    if (!names.every((name) => typeof name === 'string') || !names.includes(this.keys.waitpoint)) {
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
