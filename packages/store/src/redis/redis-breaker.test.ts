import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RedisBreaker, type RedisBreakerOptions, type RedisOutage } from './redis-breaker.js';

/** A connection as the breaker sees it: a status, its events, and PINGs answered as told. */
class FakeConnection extends EventEmitter {
  status: string;
  /** How the next PINGs are answered. */
  answer: 'pong' | 'fail' | 'hang' = 'pong';
  pings = 0;
  readonly #hanging: { resolve: () => void; reject: (error: Error) => void }[] = [];

  constructor(status = 'ready') {
    super();
    this.status = status;
  }

  ping(): Promise<unknown> {
    this.pings++;
    if (this.answer === 'pong') return Promise.resolve('PONG');
    if (this.answer === 'fail') return Promise.reject(new Error('Connection is closed.'));
    return new Promise((resolve, reject) => this.#hanging.push({ resolve: () => resolve('PONG'), reject }));
  }

  /** Answers the PINGs left hanging. */
  wake(): void {
    for (const ping of this.#hanging.splice(0)) ping.resolve();
  }

  /** Fails the PINGs left hanging (the connection dropped them). */
  drop(): void {
    for (const ping of this.#hanging.splice(0)) ping.reject(new Error('Connection is closed.'));
  }

  /** Moves to `status`, emitting it as ioredis does. */
  become(status: string): void {
    this.status = status;
    this.emit(status);
  }
}

function breaker(connections: Record<string, FakeConnection>, options: Partial<RedisBreakerOptions> = {}) {
  const opened: RedisOutage[] = [];
  const closed: (RedisOutage & { downMs: number })[] = [];
  const made = new RedisBreaker({
    connections,
    onOpen: (outage) => opened.push(outage),
    onClose: (outage) => closed.push(outage),
    ...options,
  });
  return { breaker: made, opened, closed };
}

describe('RedisBreaker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets requests through while every connection is ready', () => {
    const { breaker: b, opened } = breaker({ commands: new FakeConnection(), queue: new FakeConnection() });
    expect(b.available).toBe(true);
    expect(b.state).toBe('closed');
    expect(opened).toEqual([]);
  });

  it('opens at once when a connection closes, and reports the outage once', () => {
    const commands = new FakeConnection();
    const queue = new FakeConnection();
    const { breaker: b, opened } = breaker({ commands, queue });
    queue.become('close');
    expect(b.available).toBe(false);
    expect(b.state).toBe('open');
    // ioredis goes on reporting every reconnect attempt: still one outage.
    for (let attempt = 0; attempt < 5; attempt++) {
      queue.become('reconnecting');
      queue.emit('error', new Error('connect ECONNREFUSED'));
      queue.become('close');
      commands.become('close');
    }
    expect(opened).toEqual([{ reason: 'connection "queue" closed', since: Date.now() }]);
    expect(b.outage?.reason).toBe('connection "queue" closed');
  });

  it('is unavailable as soon as a connection is not ready, before any event', () => {
    const commands = new FakeConnection();
    const { breaker: b } = breaker({ commands });
    commands.status = 'reconnecting';
    expect(b.available).toBe(false);
  });

  it('closes at the first probe after the connections are ready again, reporting how long it lasted', async () => {
    const commands = new FakeConnection();
    const sub = new FakeConnection();
    const { breaker: b, closed } = breaker({ commands, sub });
    commands.become('close');
    sub.become('close');
    await vi.advanceTimersByTimeAsync(2_500);
    expect(b.available).toBe(false);
    commands.become('ready');
    await vi.advanceTimersByTimeAsync(0);
    // One connection back is not enough.
    expect(b.state).toBe('open');
    sub.become('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(b.available).toBe(true);
    expect(closed).toEqual([
      { reason: 'connection "commands" closed', since: expect.any(Number), downMs: 2_500 },
    ]);
  });

  it('probes with a backoff that doubles from 100 ms up to 1 s', async () => {
    const commands = new FakeConnection();
    const { breaker: b } = breaker({ commands }, { heartbeatMs: 0 });
    commands.answer = 'fail';
    b.trip('test');
    const times: number[] = [];
    const start = Date.now();
    commands.ping = () => {
      times.push(Date.now() - start);
      return Promise.reject(new Error('Connection is closed.'));
    };
    await vi.advanceTimersByTimeAsync(5_000);
    expect(times.slice(0, 8)).toEqual([100, 300, 700, 1_500, 2_500, 3_500, 4_500]);
  });

  it('notices a Redis that hangs with its connections open, and closes once it answers', async () => {
    const commands = new FakeConnection();
    const { breaker: b, opened, closed } = breaker({ commands }, { heartbeatMs: 1_000, pingTimeoutMs: 500 });
    commands.answer = 'hang';
    await vi.advanceTimersByTimeAsync(1_000);
    expect(b.available).toBe(true);
    await vi.advanceTimersByTimeAsync(500);
    expect(b.available).toBe(false);
    expect(opened.map((outage) => outage.reason)).toEqual(['PING unanswered for 500 ms']);
    // No PING piles up behind the one left unanswered.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(commands.pings).toBe(1);
    commands.answer = 'pong';
    commands.wake();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(b.available).toBe(true);
    expect(closed).toHaveLength(1);
    expect(commands.pings).toBe(2);
  });

  it('sends a new PING once reconnected, whatever became of one sent before the connection dropped', async () => {
    const store = new FakeConnection();
    const { breaker: b, closed } = breaker({ store }, { heartbeatMs: 1_000, pingTimeoutMs: 1_000 });
    store.answer = 'hang';
    await vi.advanceTimersByTimeAsync(1_000);
    store.become('close');
    await vi.advanceTimersByTimeAsync(3_000);
    expect([b.state, store.pings]).toEqual(['open', 1]);
    store.answer = 'pong';
    store.become('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(b.available).toBe(true);
    expect(closed).toHaveLength(1);
    expect(store.pings).toBe(2);
  });

  it('probes again at once when a connection became ready during a probe that failed', async () => {
    const commands = new FakeConnection();
    const queue = new FakeConnection();
    const { breaker: b } = breaker({ commands, queue }, { heartbeatMs: 0 });
    commands.answer = 'hang';
    b.trip('test');
    await vi.advanceTimersByTimeAsync(100);
    expect(commands.pings).toBe(1);
    queue.become('ready');
    commands.answer = 'pong';
    commands.drop();
    await vi.advanceTimersByTimeAsync(0);
    expect(b.available).toBe(true);
    expect(commands.pings).toBe(2);
  });

  it('made while connecting: no outage when the connections come up, one when one fails first', async () => {
    const commands = new FakeConnection('connecting');
    const fresh = breaker({ commands });
    expect(fresh.breaker.available).toBe(false);
    commands.become('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(fresh.breaker.available).toBe(true);
    expect([fresh.opened, fresh.closed]).toEqual([[], []]);

    const down = new FakeConnection('connecting');
    const failing = breaker({ commands: down });
    down.emit('error', new Error('connect ECONNREFUSED'));
    expect(failing.opened.map((outage) => outage.reason)).toEqual(['connection "commands" failed']);
    down.become('ready');
    await vi.advanceTimersByTimeAsync(0);
    expect(failing.breaker.available).toBe(true);
    expect(failing.closed).toHaveLength(1);
  });

  it('reports nothing once disposed (the connections are being closed)', async () => {
    const commands = new FakeConnection();
    const { breaker: b, opened } = breaker({ commands });
    b.dispose();
    commands.become('end');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(opened).toEqual([]);
    expect(commands.listenerCount('close') + commands.listenerCount('ready')).toBe(0);
  });

  it('refuses options out of bounds, naming them', () => {
    expect(() => new RedisBreaker({ connections: {} })).toThrow(/"connections"/);
    expect(() => new RedisBreaker({ connections: { a: new FakeConnection() }, pingConnection: 'b' })).toThrow(
      /"pingConnection" names no connection: b/,
    );
    expect(() => new RedisBreaker({ connections: { a: new FakeConnection() }, pingTimeoutMs: 0 })).toThrow(
      /"pingTimeoutMs" must be a positive number/,
    );
    expect(
      () =>
        new RedisBreaker({
          connections: { a: new FakeConnection() },
          minProbeIntervalMs: 500,
          maxProbeIntervalMs: 100,
        }),
    ).toThrow(/"maxProbeIntervalMs" must be at least minProbeIntervalMs \(500\)/);
  });
});
