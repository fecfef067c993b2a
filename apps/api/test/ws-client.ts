/**
 * A gateway client for tests, on the `ws` package: keeps every frame it
 * receives and lets a test await the frames it expects (never a sleep).
 */
import type { WsServerFrame } from '@tether/protocol';
import WebSocket, { type ClientOptions } from 'ws';

export interface WsConnection {
  socket: WebSocket;
  /** Every frame received, parsed, in order. */
  frames: WsServerFrame[];
  /** Resolves with the close code and reason once the socket closes. */
  closed: Promise<{ code: number; reason: string }>;
  send(frame: unknown): void;
  /** Resolves with the first frame received (now or later, after `from`) for which `predicate` holds. */
  waitFor<F extends WsServerFrame = WsServerFrame>(
    predicate: (frame: WsServerFrame) => boolean,
    options?: { from?: number; timeoutMs?: number },
  ): Promise<F>;
  /** The frames of a type, in order. */
  ofType<T extends WsServerFrame['type']>(type: T): Extract<WsServerFrame, { type: T }>[];
  /** Sends `ping` and waits for its `pong`: every frame sent before it has been served. */
  roundTrip(): Promise<void>;
  close(): void;
}

/** Opens a socket on `url` (`ws://…/v1/ws`); resolves once it is open (or closed, for refused ones). */
export function openWs(
  url: string,
  headers: Record<string, string> = {},
  options: ClientOptions = {},
): Promise<WsConnection> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, ...options });
    const frames: WsServerFrame[] = [];
    const waiters = new Set<() => void>();
    let over = false;
    const notify = () => {
      for (const waiter of [...waiters]) waiter();
    };
    const closed = new Promise<{ code: number; reason: string }>((done) => {
      socket.on('close', (code, reason) => {
        over = true;
        done({ code, reason: reason.toString() });
        notify();
      });
    });
    socket.on('message', (data) => {
      frames.push(JSON.parse(data.toString()) as WsServerFrame);
      notify();
    });
    socket.on('error', () => {});
    const connection: WsConnection = {
      socket,
      frames,
      closed,
      send: (frame) => socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
      waitFor<F extends WsServerFrame = WsServerFrame>(
        predicate: (frame: WsServerFrame) => boolean,
        { from = 0, timeoutMs = 30_000 }: { from?: number; timeoutMs?: number } = {},
      ): Promise<F> {
        return new Promise((found, fail) => {
          const check = () => {
            const frame = frames.slice(from).find(predicate);
            if (frame) {
              done();
              found(frame as F);
            } else if (over) {
              done();
              fail(new Error(`socket closed before the frame came; frames: ${JSON.stringify(frames)}`));
            }
          };
          const timer = setTimeout(() => {
            done();
            fail(new Error(`timed out waiting for a frame; frames: ${JSON.stringify(frames)}`));
          }, timeoutMs);
          const done = () => {
            clearTimeout(timer);
            waiters.delete(check);
          };
          waiters.add(check);
          check();
        });
      },
      ofType: <T extends WsServerFrame['type']>(type: T) =>
        frames.filter((frame): frame is Extract<WsServerFrame, { type: T }> => frame.type === type),
      async roundTrip() {
        const from = frames.length;
        socket.send(JSON.stringify({ type: 'ping' }));
        await connection.waitFor((frame) => frame.type === 'pong', { from });
      },
      close: () => socket.close(),
    };
    socket.once('open', () => resolve(connection));
    // Refused at the upgrade (an HTTP answer), or accepted and closed at once: the test reads `closed`.
    socket.once('unexpected-response', (_request, response) =>
      reject(new Error(`the upgrade was answered ${response.statusCode}`)),
    );
  });
}
