/**
 * What the WebSocket gateway's end-to-end files share (ws.int.test.ts and
 * ws-limits.int.test.ts): a deployment, sockets closed when the test ends,
 * replay runs, frame matchers, and an API in process with a session whose run
 * a pretend worker has claimed. Each file registers its own `afterEach` that
 * runs {@link cleanups}, then `stopAll`.
 */
import type { AddressInfo } from 'node:net';
import type { WsServerFrame } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { ACME, type BuildOptions, build } from './helper.js';
import { deployment } from './processes.js';
import { openWs, type WsConnection } from './ws-client.js';

/** What to undo when the test ends: its sockets, closed. */
export const cleanups: (() => Promise<void>)[] = [];

export const setup = () => deployment('ws');

export const wsUrl = (base: string, query = '') => `${base.replace(/^http/, 'ws')}/v1/ws${query}`;

export async function socket(
  base: string,
  headers: Record<string, string> = ACME,
  query = '',
): Promise<WsConnection> {
  const connection = await openWs(wsUrl(base, query), headers);
  cleanups.push(async () => {
    connection.close();
    await connection.closed;
  });
  return connection;
}

export const replay = (...script: unknown[]) => ({ provider: 'replay', script });

/** A run that asks which colour, then says what it was told. */
export const ASKS = replay(
  { toolCalls: [{ name: 'clarify', arguments: { question: 'Which colour?', choices: ['red', 'blue'] } }] },
  { content: 'done' },
);

export const ofType =
  <T extends WsServerFrame['type']>(
    type: T,
    extra: (frame: Extract<WsServerFrame, { type: T }>) => boolean = () => true,
  ) =>
  (frame: WsServerFrame) =>
    frame.type === type && extra(frame as Extract<WsServerFrame, { type: T }>);

// The API in process (`the WebSocket gateway, in process`).

export const WORKER = 'test-worker:1';

export async function listening(options: BuildOptions = {}) {
  const built = await build(options);
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = built.app.server.address() as AddressInfo;
  return { ...built, base: `http://127.0.0.1:${port}` };
}

/** A session whose one run a (pretend) worker has claimed, so events can be appended to it. */
export async function sessionRun(app: FastifyInstance): Promise<{ sessionId: string; runId: string }> {
  const { id: sessionId } = await app.sessions.create('acme');
  const { run } = await app.sessions.submit('acme', sessionId, {
    input: 'hi',
    model: { provider: 'replay', script: [{ content: 'x' }] },
  });
  expect((await app.store.claim(run.id, WORKER, 1, 'test-worker')).status).toBe('ok');
  return { sessionId, runId: run.id };
}

export const delta = (text: string) => ({ type: 'message.delta' as const, data: { text } });

export async function log(app: FastifyInstance, runId: string): Promise<string[]> {
  return (await app.store.readEvents(runId, '0', 10_000)).map((event) => `${runId}:${event.id}`);
}

export const ids = (connection: WsConnection) => connection.ofType('event').map((frame) => frame.event.id);
