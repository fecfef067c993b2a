import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/**
 * Text frames written whole, once per process, onto every socket that sends them.
 *
 * `ws` frames each message it sends: a header of its own, then `cork`, two
 * writes and `uncork`, which is a `writev` of two buffers per socket per
 * event. A server's frames are never masked and the gateway negotiates no
 * extension (no permessage-deflate), so a frame's bytes are the same on every
 * socket: {@link textFrame} builds them once (header and payload in one
 * buffer), and {@link FrameWriter} hands that buffer to the socket in one
 * write.
 *
 * The writer stays behind `ws`'s own state: it writes directly only while the
 * WebSocket is open and its sender holds nothing back (no message being
 * compressed or read from a Blob, none queued behind one, no fragmented
 * message half sent); otherwise it sends through `ws`, which queues the frame
 * in order. Frames `ws` writes itself (pings, pongs, close) are written in
 * one synchronous step too, so the two never interleave inside a frame. The
 * bytes written wait in the same `net.Socket` buffer `ws` uses, so
 * `bufferedAmount` counts them as before.
 *
 * The sender's state is read from `ws`'s internals (`_sender`, `_socket`); a
 * `ws` that no longer has them as expected is used through `send` alone (see
 * {@link FrameWriter.direct}, which a test checks with the `ws` installed).
 */

/** A text frame: its bytes on the wire (FIN, opcode 1, unmasked), and its payload, a view of them. */
export interface TextFrame {
  wire: Buffer;
  payload: Buffer;
}

/** The text frame of `text`, unfragmented and unmasked, as a server sends it. */
export function textFrame(text: string): TextFrame {
  const length = Buffer.byteLength(text);
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const wire = Buffer.allocUnsafe(header + length);
  wire[0] = 0x81;
  if (length < 126) {
    wire[1] = length;
  } else if (length < 65_536) {
    wire[1] = 126;
    wire.writeUInt16BE(length, 2);
  } else {
    wire[1] = 127;
    wire.writeBigUInt64BE(BigInt(length), 2);
  }
  wire.write(text, header, 'utf8');
  return { wire, payload: wire.subarray(header) };
}

/** The parts of `ws`'s Sender the writer reads (ws 8: lib/sender.js). */
interface SenderState {
  /** 0 (DEFAULT) unless a message is being compressed or read from a Blob. */
  _state: number;
  /** Sends waiting for that to end. */
  _queue: unknown[];
  /** False while a fragmented message is half sent. */
  _firstFragment: boolean;
}

/** A server-side `ws` WebSocket's internals, as ws 8 has them. */
interface WebSocketState {
  _isServer?: unknown;
  _sender?: Partial<SenderState> | null;
  _socket?: Partial<Socket> | null;
}

/** ws's `Sender` state DEFAULT: nothing compressing, nothing read from a Blob. */
const SENDER_IDLE = 0;
/** `WebSocket.OPEN`. */
const OPEN = 1;

/** Writes whole text frames onto one WebSocket's socket (see the module's comment). */
export class FrameWriter {
  readonly #ws: WebSocket;
  readonly #sender: SenderState | undefined;
  readonly #socket: Socket | undefined;

  constructor(ws: WebSocket) {
    this.#ws = ws;
    const state = ws as unknown as WebSocketState;
    const sender = state._sender;
    const socket = state._socket;
    const usable =
      state._isServer === true &&
      ws.extensions === '' &&
      sender != null &&
      typeof sender._state === 'number' &&
      Array.isArray(sender._queue) &&
      typeof sender._firstFragment === 'boolean' &&
      socket != null &&
      typeof socket.write === 'function';
    this.#sender = usable ? (sender as SenderState) : undefined;
    this.#socket = usable ? (socket as Socket) : undefined;
  }

  /** Whether frames can be written whole onto the socket (else every one goes through `ws.send`). */
  get direct(): boolean {
    return this.#sender !== undefined;
  }

  /** Sends `frame`: in one write when `ws` holds nothing back, else through `ws.send`, in order. */
  write(frame: TextFrame): void {
    const sender = this.#sender;
    if (
      sender !== undefined &&
      this.#ws.readyState === OPEN &&
      sender._state === SENDER_IDLE &&
      sender._queue.length === 0 &&
      sender._firstFragment
    ) {
      (this.#socket as Socket).write(frame.wire);
      return;
    }
    this.#ws.send(frame.payload, { binary: false });
  }
}
