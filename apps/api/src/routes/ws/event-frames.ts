import type { SessionEvent } from '@tether/store/sessions';
import { type TextFrame, textFrame } from './text-frame.js';

/**
 * The `event` frames of this process, encoded once per event: every socket
 * following a session sends the same bytes for each of its events, and with
 * many sockets on a session, encoding it for each (JSON.stringify, then UTF-8)
 * was a tenth of the gateway's time in the fan-out benchmark. A frame is kept
 * whole, header and payload (see {@link textFrame}), so that each socket
 * writes it in one go. Keeps the `capacity` most recent; a socket far behind
 * (a replay) encodes its own.
 */
export class EventFrames {
  readonly #capacity: number;
  readonly #frames = new Map<string, TextFrame>();
  readonly #byEvent = new WeakMap<SessionEvent, TextFrame>();
  /** The last event asked for, and its frame: a session's sockets ask for the same one in a row. */
  #lastEvent: SessionEvent | undefined;
  #lastFrame: TextFrame | undefined;

  constructor(capacity = 2_048) {
    this.#capacity = capacity;
  }

  /** The frame `{ type: 'event', sessionId, event }`. */
  get(sessionId: string, event: SessionEvent): TextFrame {
    if (event === this.#lastEvent) return this.#lastFrame as TextFrame;
    // Live events come as one object for every socket (see asSessionEvent): found without a key.
    let frame = this.#byEvent.get(event);
    if (frame === undefined) {
      const key = `${sessionId} ${event.id}`;
      frame = this.#frames.get(key);
      if (frame === undefined) {
        frame = textFrame(JSON.stringify({ type: 'event', sessionId, event }));
        this.#frames.set(key, frame);
        // Maps iterate in insertion order: the first key is the oldest.
        if (this.#frames.size > this.#capacity)
          this.#frames.delete(this.#frames.keys().next().value as string);
      }
      this.#byEvent.set(event, frame);
    }
    this.#lastEvent = event;
    this.#lastFrame = frame;
    return frame;
  }
}
