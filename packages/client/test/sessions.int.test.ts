/**
 * client.sessions against a real API process and worker: create, get, list,
 * send (with multitask), the transcript page by page and whole, the session's
 * event stream through a forced disconnect and resumed after an id, and
 * delete (409 while busy, then with cancel, which ends a follower's stream).
 */
import type { ReplayScript } from '@tether/protocol';
import { killAllSpawned } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SessionEvent,
  TetherClient,
  TetherConflictError,
  TetherError,
  TetherNotFoundError,
} from '../src/index.js';
import { API_KEY, type Stack, startCuttableProxy, startStack } from './stack.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const fast = { reconnect: { initialDelayMs: 20, maxDelayMs: 100 } };

let stack: Stack;
let client: TetherClient;
beforeAll(async () => {
  stack = await startStack('client-sessions');
  client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
}, 30_000);
afterAll(async () => {
  await stack?.stop();
  await killAllSpawned();
});

/** Reads the session's stream until `runId` has ended; returns what came, in order. */
async function untilEnded(
  stream: AsyncGenerator<SessionEvent>,
  runIds: readonly string[],
  onEvent: (event: SessionEvent) => void = () => {},
): Promise<SessionEvent[]> {
  const seen: SessionEvent[] = [];
  const open = new Set(runIds);
  for await (const event of stream) {
    seen.push(event);
    onEvent(event);
    if (event.type.startsWith('run.') && ['completed', 'failed', 'cancelled'].includes(event.type.slice(4))) {
      open.delete(event.runId);
      if (open.size === 0) break;
    }
  }
  return seen;
}

describe('client.sessions', () => {
  it('creates, reads and lists a session; sends two messages and follows both runs on one stream through a forced disconnect; reads the transcript', async () => {
    const created = await client.sessions.create({ metadata: { user: 'u-1' } });
    expect(created.id).toMatch(/^ses_/);
    expect(created).toMatchObject({ status: 'idle', runs: 0, lastRunId: null, metadata: { user: 'u-1' } });
    expect(typeof created.token).toBe('string');
    expect(await client.sessions.get(created.id)).toMatchObject({ id: created.id, status: 'idle' });
    const listed = await client.sessions.list({ limit: 100 });
    expect(listed.data.map((s) => s.id)).toContain(created.id);

    const proxy = await startCuttableProxy(stack.port);
    try {
      const viaProxy = new TetherClient({ baseUrl: proxy.url, apiKey: API_KEY });
      const script = (text: string): ReplayScript => [
        { toolCalls: [call('bash', { command: `echo ${text}` })] },
        { content: `said ${text}` },
      ];
      const first = await client.sessions.send(created.id, {
        input: 'say one',
        model: { provider: 'replay', script: script('one') },
      });
      expect(first).toMatchObject({ status: 'queued', sessionId: created.id });
      const second = await client.sessions.send(created.id, {
        input: 'say two',
        model: { provider: 'replay', script: script('two') },
        multitask: 'enqueue',
      });

      let cut = 0;
      let count = 0;
      const seen = await untilEnded(viaProxy.sessions.events(created.id, fast), [first.id, second.id], () => {
        if (++count === 3) cut = proxy.cutAll();
      });
      expect(cut).toBeGreaterThan(0);
      expect(proxy.connections()).toBeGreaterThan(1);
      // Each run's events once, in its log's order, the first run's before the second's.
      const ids = seen.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const run of [first, second]) {
        const own = seen.filter((e) => e.runId === run.id);
        const log = (await client.events(run.id, { limit: 500 })).data;
        expect(own.map((e) => e.id)).toEqual(log.map((e) => `${run.id}:${e.id}`));
      }
      const lastOfFirst = seen.findLastIndex((e) => e.runId === first.id);
      const firstOfSecond = seen.findIndex((e) => e.runId === second.id && e.type !== 'run.queued');
      expect(lastOfFirst).toBeLessThan(firstOfSecond);
      expect(seen.find((e) => e.runId === second.id && e.type === 'run.completed')?.data).toEqual({
        output: 'said two',
      });

      // Resumed after the first run's terminal event: the second run's events only.
      const terminalOfFirst = seen[lastOfFirst]?.id as string;
      const rest = await untilEnded(client.sessions.events(created.id, { after: terminalOfFirst }), [
        second.id,
      ]);
      expect(rest.map((e) => e.id)).toEqual(
        seen
          .slice(lastOfFirst + 1)
          .filter((e) => e.runId === second.id)
          .map((e) => e.id),
      );
    } finally {
      await proxy.close();
    }

    const session = await client.sessions.get(created.id);
    expect(session).toMatchObject({ status: 'idle', runs: 2 });

    const pages: number[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await client.sessions.messages(created.id, { limit: 3, ...(cursor ? { cursor } : {}) });
      pages.push(page.data.length);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    const transcript = [];
    for await (const entry of client.sessions.allMessages(created.id, { limit: 3 })) transcript.push(entry);
    expect(pages.reduce((a, b) => a + b, 0)).toBe(transcript.length);
    expect(pages[0]).toBe(3);
    expect(transcript.map((e) => [e.role, e.content])).toEqual([
      ['user', 'say one'],
      ['assistant', ''],
      ['tool', expect.stringContaining('one')],
      ['assistant', 'said one'],
      ['user', 'say two'],
      ['assistant', ''],
      ['tool', expect.stringContaining('two')],
      ['assistant', 'said two'],
    ]);
    expect(transcript[1]?.toolCalls?.[0]).toMatchObject({ name: 'bash' });
  }, 60_000);

  it('refuses a second message with multitask reject and a delete while busy; deletes with cancel, which ends a follower', async () => {
    const created = await client.sessions.create();
    const waiting = await client.sessions.send(created.id, {
      input: 'ask me',
      model: {
        provider: 'replay',
        script: [
          { toolCalls: [call('clarify', { question: 'Which?', choices: ['a', 'b'] })] },
          { content: 'ok' },
        ],
      },
      clarify: { timeoutMs: 60_000 },
    });
    const stream = client.sessions.events(created.id, fast);
    for await (const event of stream) if (event.type === 'clarify.requested') break;
    const session = await client.sessions.get(created.id);
    expect(session).toMatchObject({ status: 'waiting_for_input', pendingClarify: { runId: waiting.id } });

    const rejected = await client.sessions
      .send(created.id, {
        input: 'again',
        model: { provider: 'replay', script: [{ content: 'x' }] },
        multitask: 'reject',
      })
      .catch((error: unknown) => error);
    expect(rejected).toBeInstanceOf(TetherConflictError);
    expect(rejected).toMatchObject({ code: 'ERR_SESSION_BUSY', status: 409 });
    const busy = await client.sessions.delete(created.id).catch((error: unknown) => error);
    expect(busy).toMatchObject({ code: 'ERR_SESSION_BUSY', status: 409 });

    // A follower open on the session ends (without an error) once it is deleted.
    let following: () => void = () => {};
    const reading = new Promise<void>((resolve) => {
      following = resolve;
    });
    const follower = (async () => {
      const types: string[] = [];
      for await (const event of client.sessions.events(created.id, { ...fast, after: `${waiting.id}:0-0` })) {
        types.push(event.type);
        if (event.type === 'clarify.requested') following();
      }
      return types;
    })();
    await reading;
    await client.sessions.delete(created.id, { cancel: true });
    const types = await follower;
    expect(types).toContain('clarify.requested');
    await expect(client.sessions.get(created.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.get(waiting.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.sessions.messages(created.id)).rejects.toBeInstanceOf(TetherNotFoundError);
  }, 60_000);

  it('checks its options before sending anything', async () => {
    await expect(client.sessions.get('')).rejects.toBeInstanceOf(TetherError);
    await expect(client.sessions.list({ limit: 0 })).rejects.toMatchObject({
      code: 'ERR_CLIENT_INVALID_OPTION',
    });
    await expect(client.sessions.messages('ses_x', { limit: 1.5 })).rejects.toMatchObject({
      code: 'ERR_CLIENT_INVALID_OPTION',
    });
  });
});
