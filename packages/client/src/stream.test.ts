/**
 * TetherClient.stream over real SSE from the fake API: replay then live, a
 * forced disconnect (socket destroyed mid-stream) and a stalled connection,
 * both resumed with Last-Event-ID and no event twice; the end at the terminal
 * event; typed errors that end the iteration; and closing on break.
 */
import { once } from 'node:events';
import type { RunEvent } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TetherClient } from './client.js';
import { TetherNotFoundError, TetherProtocolError, TetherUnauthorizedError } from './errors.js';
import { compareEventIds } from './stream.js';
import { FakeApi } from './testing/fake-api.js';

let api: FakeApi;
let client: TetherClient;
const fast = { reconnect: { initialDelayMs: 5, maxDelayMs: 20 } };

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  await api.start();
  client = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a', retry: false });
});

afterEach(async () => {
  await api.close();
});

async function collect(iterable: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

/** A run whose log already holds a whole lifecycle: 8 events, the last terminal. */
function finishedRun(): string {
  const { run } = api.createRun({ input: 'x' }, 'tenant-a');
  api.append(run.id, 'run.started', { attempt: 1, workerId: 'w1' });
  api.append(run.id, 'attempt.started', { attempt: 1, resumed: false, step: 0 });
  api.append(run.id, 'message.delta', { text: 'Reading' });
  api.append(run.id, 'tool.call', { callId: 'c1', name: 'read_file', arguments: '{"path":"a"}' });
  api.append(run.id, 'tool.result', { callId: 'c1', name: 'read_file', ok: true, content: 'hello' });
  api.append(run.id, 'todo.updated', { todos: [{ id: 't1', content: 'Read a', status: 'completed' }] });
  api.append(run.id, 'run.completed', { output: 'done' });
  return run.id;
}

describe('stream', () => {
  it('replays the log with bearer auth and ends at the terminal event', async () => {
    const id = finishedRun();
    const events = await collect(client.stream(id));
    expect(events.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'attempt.started',
      'message.delta',
      'tool.call',
      'tool.result',
      'todo.updated',
      'run.completed',
    ]);
    expect(events).toEqual(api.runs.get(id)?.events);
    const [request] = api.streamRequests();
    expect(request?.headers.authorization).toBe('Bearer key-a');
    expect(request?.headers['last-event-id']).toBeUndefined();
  });

  it('reconnects after the socket is destroyed mid-stream, with Last-Event-ID, yielding each event once', async () => {
    const id = finishedRun();
    api.dropStreamsAfter = [3, 2];
    const events = await collect(client.stream(id, fast));
    const log = api.runs.get(id)?.events ?? [];
    expect(events).toEqual(log);
    const requests = api.streamRequests();
    expect(requests).toHaveLength(3);
    expect(requests[1]?.headers['last-event-id']).toBe(log[2]?.id);
    expect(requests[2]?.headers['last-event-id']).toBe(log[4]?.id);
  });

  it('drops replayed events at or below the last id when the server overlaps its replay', async () => {
    const id = finishedRun();
    api.dropStreamsAfter = [4];
    api.overlapReplay = 3;
    const events = await collect(client.stream(id, fast));
    expect(events.map((e) => e.id)).toEqual(api.runs.get(id)?.events.map((e) => e.id));
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it('follows live events across a disconnect and ends at the terminal event', async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    api.dropStreamsAfter = [2];
    const seen: string[] = [];
    const done = (async () => {
      for await (const event of client.stream(run.id, fast)) seen.push(event.type);
    })();
    await api.waitFor((r) => r.headers.accept === 'text/event-stream');
    api.append(run.id, 'run.started', { attempt: 1, workerId: 'w1' }); // second event: connection dropped
    await api.waitFor((r) => r.headers.accept === 'text/event-stream', 2);
    api.append(run.id, 'message.delta', { text: 'hi' });
    api.append(run.id, 'run.failed', { error: { code: 'ERR_X', message: 'broke' } });
    api.append(run.id, 'usage', { inputTokens: 1, outputTokens: 1, totalTokens: 2 }); // after terminal: never seen
    await done;
    expect(seen).toEqual(['run.queued', 'run.started', 'message.delta', 'run.failed']);
  });

  it("follows a crew parent through its children's events and the wait for them, to its terminal event", async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    const child = api.createChild(run.id, 0);
    api.append(run.id, 'run.started', { attempt: 1, workerId: 'w1' });
    api.append(run.id, 'child.started', { childRunId: child.run.id, index: 0, goal: 'Write the parser' });
    api.dropStreamsAfter = [3]; // the connection drops while the parent waits for its child
    const seen: RunEvent[] = [];
    const done = (async () => {
      for await (const event of client.stream(run.id, fast)) seen.push(event);
    })();
    await api.waitFor((r) => r.headers.accept === 'text/event-stream', 2);
    api.append(run.id, 'child.finished', {
      childRunId: child.run.id,
      index: 0,
      status: 'escalated',
      summary: 'Needs the grammar',
    });
    api.append(run.id, 'run.completed', { output: 'done' });
    await done;
    expect(seen.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'child.started',
      'child.finished',
      'run.completed',
    ]);
    const finished = seen[3];
    expect(finished?.type === 'child.finished' && finished.data).toEqual({
      childRunId: child.run.id,
      index: 0,
      status: 'escalated',
      summary: 'Needs the grammar',
    });
  });

  it('ends after the terminal event even when the server keeps the connection open', async () => {
    const id = finishedRun();
    api.endAfterTerminal = false;
    const closed = once(api, 'stream-closed');
    const events = await collect(client.stream(id));
    expect(events.at(-1)?.type).toBe('run.completed');
    await closed; // the client closed it
  });

  it('reconnects when a connection stalls past idleTimeoutMs', async () => {
    const id = finishedRun();
    api.stallStreamsAfter = [2];
    const events = await collect(client.stream(id, { ...fast, idleTimeoutMs: 150 }));
    expect(events).toEqual(api.runs.get(id)?.events);
    expect(api.streamRequests()).toHaveLength(2);
  });

  it('reads through heartbeat comments', async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    api.heartbeatMs = 5;
    const done = collect(client.stream(run.id));
    await once(api, 'heartbeat');
    await once(api, 'heartbeat');
    api.append(run.id, 'run.cancelled', {});
    expect((await done).map((e) => e.type)).toEqual(['run.queued', 'run.cancelled']);
  });

  it('resumes after lastEventId and ends at once when the run finished before', async () => {
    const id = finishedRun();
    const log = api.runs.get(id)?.events ?? [];
    const rest = await collect(client.stream(id, { lastEventId: log[5]?.id }));
    expect(rest.map((e) => e.type)).toEqual(['todo.updated', 'run.completed']);
    const none = await collect(client.stream(id, { ...fast, lastEventId: log.at(-1)?.id }));
    expect(none).toEqual([]);
    // One stream request, then one status check: no reconnect loop.
    expect(api.streamRequests()).toHaveLength(2);
  });

  it('throws typed errors it cannot fix by reconnecting: 404 and 401', async () => {
    await expect(collect(client.stream('run_9999', fast))).rejects.toBeInstanceOf(TetherNotFoundError);
    const anonymous = new TetherClient({ baseUrl: api.baseUrl, retry: false });
    const id = finishedRun();
    await expect(collect(anonymous.stream(id, fast))).rejects.toBeInstanceOf(TetherUnauthorizedError);
    expect(api.streamRequests()).toHaveLength(2);
  });

  it('accepts the run-scoped token instead of an API key', async () => {
    const id = finishedRun();
    const browser = new TetherClient({ baseUrl: api.baseUrl, retry: false });
    const events = await collect(browser.stream(id, { token: `tok_${id}` }));
    expect(events.at(-1)?.type).toBe('run.completed');
    expect(api.streamRequests()[0]?.query.get('token')).toBe(`tok_${id}`);
  });

  it('reconnects after a 429 on connect', async () => {
    const id = finishedRun();
    api.rateLimitNext(1, '0');
    const events = await collect(client.stream(id, fast));
    expect(events).toHaveLength(8);
  });

  it('gives up after maxAttempts consecutive failures', async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    // Every connection stalls before its first event.
    api.stallStreamsAfter = [0, 0, 0, 0];
    const error = await collect(
      client.stream(run.id, {
        reconnect: { initialDelayMs: 1, maxDelayMs: 1, maxAttempts: 2 },
        idleTimeoutMs: 30,
      }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_CLIENT_TIMEOUT' });
    expect(api.streamRequests()).toHaveLength(3);
  });

  it('throws TetherProtocolError on an event that is not JSON', async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    const iterator = client.stream(run.id, fast);
    const first = await iterator.next();
    expect(first.value).toMatchObject({ type: 'run.queued' });
    const pending = iterator.next();
    api.writeRaw(run.id, 'id: 9-9\nevent: message\ndata: {not json\n\n');
    await expect(pending).rejects.toBeInstanceOf(TetherProtocolError);
  });

  it('closes the connection when the consumer breaks out', async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    const closed = once(api, 'stream-closed');
    for await (const event of client.stream(run.id)) {
      expect(event.type).toBe('run.queued');
      break;
    }
    await closed;
  });

  it('stops with the signal reason when aborted', async () => {
    const { run } = api.createRun({ input: 'x' }, 'tenant-a');
    const controller = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const event of client.stream(run.id, { signal: controller.signal })) {
        seen.push(event.type);
        controller.abort(new Error('user stopped'));
      }
    })();
    await expect(done).rejects.toThrow('user stopped');
    expect(seen).toEqual(['run.queued']);
  });
});

describe('compareEventIds', () => {
  it('orders Redis stream ids and integers numerically', () => {
    expect(compareEventIds('1700000000000-9', '1700000000000-10')).toBe(-1);
    expect(compareEventIds('1700000000001-0', '1700000000000-99')).toBe(1);
    expect(compareEventIds('5-0', '5')).toBe(0);
    expect(compareEventIds('9', '10')).toBe(-1);
    expect(compareEventIds('b', 'a')).toBe(1);
  });
});
