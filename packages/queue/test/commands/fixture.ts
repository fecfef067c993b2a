import { newId, newSessionRunId } from '@tether/protocol';
import { testRedisUrl, uniquePrefix } from '@tether/testing';
import { Redis } from 'ioredis';
import { afterAll, expect } from 'vitest';
import { createKeys, type RunKeys } from '../../src/index.js';

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
export const REQUEST_ID = 'clr_test';

/**
 * One run's keys under a prefix of their own, and what a test of a script needs
 * around them: seeding the record, reading the log, watching a channel, and a
 * snapshot of every key to show that a refusal changed nothing.
 */
export class RunFixture {
  readonly redis: Redis;
  readonly runId: string;
  /** The run's session, when it was made as a session's run. */
  readonly sessionId: string | undefined;
  readonly keys: RunKeys;
  readonly cancelChannel: string;
  /** The arguments every event-appending script opens with. */
  readonly base: { channel: string; maxlen: number; runId: string };

  constructor(redis: Redis, options: { session?: boolean } = {}) {
    this.redis = redis;
    this.sessionId = options.session ? newId('ses') : undefined;
    this.runId = this.sessionId ? newSessionRunId(this.sessionId) : 'run_test';
    const keys = createKeys(uniquePrefix('lua'));
    this.keys = keys.run(this.runId);
    this.cancelChannel = keys.cancelChannel;
    this.base = { channel: this.keys.eventsChannel, maxlen: MAXLEN, runId: this.runId };
  }

  /** The run's keys with its session's under the names the scripts give them. */
  get scriptKeys() {
    const session = this.keys.session;
    return {
      ...this.keys,
      sessionRecord: session.record,
      sessionRuns: session.runs,
      sessionQueue: session.queue,
      transcript: session.transcript,
      // No crew parent: keys in the run's slot that nothing writes.
      parentRecord: this.keys.unused,
      parentEvents: this.keys.unused,
      parentDelegation: this.keys.unused,
    };
  }

  /** The run's keys with the test's clarify request. */
  get clarifyKeys(): Omit<RunKeys, 'clarify'> & { clarify: string } {
    return { ...this.keys, clarify: this.keys.clarify(REQUEST_ID) };
  }

  async seed(fields: Record<string, string | number>): Promise<void> {
    await this.redis.hset(this.keys.record, fields);
  }

  /** A pending clarify request whose deadline is `expiresAt` (epoch ms), and the run waiting on it. */
  async seedQuestion(expiresAt: number, status = 'pending'): Promise<void> {
    await this.redis.hset(this.keys.clarify(REQUEST_ID), { requestId: REQUEST_ID, status, expiresAt });
    await this.redis.set(this.keys.pending, '{"question":"?"}');
  }

  record(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.record);
  }

  request(): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.clarify(REQUEST_ID));
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

  /** Every key of the run (the test's clarify request and its session's included): its serialized value and TTL. */
  async state(): Promise<Record<string, [string | null, number]>> {
    const { clarify: _clarify, eventsChannel: _channel, session, ...keys } = this.keys;
    const { runsChannel: _runs, ...sessionKeys } = session;
    const names = [...Object.values(keys), ...Object.values(sessionKeys), this.keys.clarify(REQUEST_ID)];
    const snapshot: Record<string, [string | null, number]> = {};
    for (const name of names) {
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
