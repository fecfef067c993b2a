/**
 * The gateway's whole text frames (`textFrame`, `FrameWriter`) on real sockets: a `ws`
 * server's sockets written to directly, read by a real `ws` client and by a browser's
 * WebSocket (Node's WHATWG one, in a child process), around `ws`'s own frames.
 */
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { spawnNode } from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { type RawData, WebSocketServer } from 'ws';
import { FrameWriter, textFrame } from '../src/routes/ws/text-frame.js';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A `ws` server on a free port; resolves with its URL and, per connection, the server's socket. */
async function server(options: { perMessageDeflate?: boolean } = {}) {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    perMessageDeflate: options.perMessageDeflate ?? false,
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  cleanups.push(async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  const accepted: WebSocket[] = [];
  const waiting: ((ws: WebSocket) => void)[] = [];
  wss.on('connection', (ws) => {
    const next = waiting.shift();
    if (next) next(ws);
    else accepted.push(ws);
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    /** The server's side of the next connection. */
    next: () =>
      new Promise<WebSocket>((resolve) => {
        const ws = accepted.shift();
        if (ws) resolve(ws);
        else waiting.push(resolve);
      }),
  };
}

/** A text by its length and SHA-256: what the tests compare (a failure does not print 200 KB). */
const digest = (text: string) => `${text.length}:${createHash('sha256').update(text).digest('hex')}`;

/** What a `ws` client saw, in order: messages (text or binary), pings, pongs, and the close. */
type Seen =
  | { text: string }
  | { binary: string }
  | { ping: string }
  | { pong: string }
  | { close: number; reason: string };

async function client(url: string, options: WebSocket.ClientOptions = {}) {
  const ws = new WebSocket(url, options);
  const seen: Seen[] = [];
  const waiters = new Set<() => void>();
  const record = (entry: Seen) => {
    seen.push(entry);
    for (const waiter of [...waiters]) waiter();
  };
  ws.on('message', (data: RawData, isBinary) =>
    record(isBinary ? { binary: String(data) } : { text: digest(String(data)) }),
  );
  ws.on('ping', (data) => record({ ping: String(data) }));
  ws.on('pong', (data) => record({ pong: String(data) }));
  ws.on('close', (code, reason) => record({ close: code, reason: String(reason) }));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  cleanups.push(async () => {
    ws.terminate();
  });
  return {
    ws,
    seen,
    /** Resolves once `count` entries were seen. */
    until: (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (seen.length < count) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
  };
}

/** Texts of every header size (7-bit, 16-bit and 64-bit lengths, at their edges), ASCII and not. */
const TEXTS = [
  '',
  '{"type":"event"}',
  'x'.repeat(125),
  'x'.repeat(126),
  'é'.repeat(63),
  'x'.repeat(65_535),
  'x'.repeat(65_536),
  `${'é'.repeat(40_000)}🙂`,
  'y'.repeat(200_000),
];

describe('textFrame and FrameWriter', () => {
  it('writes whole frames a ws client reads as the same texts, at every length', async () => {
    const { url, next } = await server();
    const reader = await client(url);
    const writer = new FrameWriter(await next());
    expect(writer.direct).toBe(true);
    for (const text of TEXTS) writer.write(textFrame(text));
    await reader.until(TEXTS.length);
    expect(reader.seen).toEqual(TEXTS.map((text) => ({ text: digest(text) })));
  });

  it("keeps its frames in order with ws's own: pings, pongs, a Blob ws reads first, the close", async () => {
    const { url, next } = await server();
    const reader = await client(url);
    const ws = await next();
    const writer = new FrameWriter(ws);
    const text = (value: string) => ({ text: digest(value) });
    writer.write(textFrame('a'));
    ws.ping('p');
    writer.write(textFrame('b'));
    // ws reads a Blob's bytes asynchronously and holds what is sent after it until then:
    // written directly, c and d would overtake it.
    ws.send(new Blob(['blob']));
    writer.write(textFrame('c'));
    writer.write(textFrame('d'));
    await reader.until(6);
    // The client's ping: ws answers it, then the frame written when it came follows.
    ws.once('ping', () => writer.write(textFrame('after the ping')));
    reader.ws.ping('q');
    await reader.until(8);
    ws.close(1000, 'bye');
    writer.write(textFrame('after the close'));
    await reader.until(9);
    expect(reader.seen).toEqual([
      text('a'),
      { ping: 'p' },
      text('b'),
      { binary: 'blob' },
      text('c'),
      text('d'),
      { pong: 'q' },
      text('after the ping'),
      { close: 1000, reason: 'bye' },
    ]);
  });

  it('sends through ws when the socket negotiated permessage-deflate', async () => {
    const { url, next } = await server({ perMessageDeflate: true });
    const reader = await client(url);
    const ws = await next();
    expect(ws.extensions).toContain('permessage-deflate');
    const writer = new FrameWriter(ws);
    expect(writer.direct).toBe(false);
    for (const text of TEXTS) writer.write(textFrame(text));
    await reader.until(TEXTS.length);
    expect(reader.seen).toEqual(TEXTS.map((text) => ({ text: digest(text) })));
  });

  it("counts what a reader has not taken in ws's bufferedAmount, as for ws's own sends", async () => {
    const { url, next } = await server();
    const reader = await client(url);
    const ws = await next();
    const writer = new FrameWriter(ws);
    // The client reads nothing: past what the kernel's buffers take, the frames wait in the socket.
    (reader.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const frame = textFrame('z'.repeat(64 * 1024));
    for (let i = 0; i < 100; i++) writer.write(frame);
    const socket = (ws as unknown as { _socket: { writableLength: number } })._socket;
    expect(ws.bufferedAmount).toBeGreaterThan(64 * 1024);
    expect(ws.bufferedAmount).toBe(socket.writableLength);
    (reader.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await reader.until(100);
    expect(reader.seen).toEqual(Array(100).fill({ text: digest('z'.repeat(64 * 1024)) }));
    expect(ws.bufferedAmount).toBe(0);
  });

  it("writes frames a browser's WebSocket reads, around ws's pings and close", async () => {
    const { url, next } = await server();
    const browser = spawnNode(fileURLToPath(new URL('./ws-whatwg-client.mjs', import.meta.url)), {}, [url], {
      name: 'whatwg-client',
      nodeFlags: ['--experimental-websocket', '--no-warnings'],
    });
    cleanups.push(async () => {
      await browser.stop('SIGKILL');
    });
    const ws = await next();
    const writer = new FrameWriter(ws);
    expect(writer.direct).toBe(true);
    const pong = new Promise((resolve) => ws.once('pong', resolve));
    for (const [index, text] of TEXTS.entries()) {
      writer.write(textFrame(text));
      if (index === 3) ws.ping();
    }
    await pong;
    ws.close(1000, 'bye');
    expect(await browser.exited).toEqual({ code: 0, signal: null });
    const lines = browser
      .output()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      { open: true },
      ...TEXTS.map((text) => ({ text: digest(text) })),
      { close: 1000, reason: 'bye', clean: true },
    ]);
  });
});
