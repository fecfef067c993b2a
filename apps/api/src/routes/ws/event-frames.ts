import type { SessionEvent } from '@tether/queue';

/**
 * The `event` frames of this process, encoded once per event: every socket
 * following a session sends the same bytes for each of its events, and with
 * many sockets on a session, encoding it for each (JSON.stringify, then UTF-8)
 * was a tenth of the gateway's time in the fan-out benchmark. Keeps the
 * `capacity` most recent; a socket far behind (a replay) encodes its own.
 */
export class EventFrames {
  readonly #capacity: number;
  readonly #frames = new Map<string, Buffer>();
  readonly #byEvent = new WeakMap<SessionEvent, Buffer>();

  constructor(capacity = 2_048) {
    this.#capacity = capacity;
  }

  /** The frame `{ type: 'event', sessionId, event }`, as UTF-8 JSON. */
  get(sessionId: string, event: SessionEvent): Buffer {
    // Live events come as one object for every socket (see asSessionEvent): found without a key.
    const known = this.#byEvent.get(event);
    if (known !== undefined) return known;
    const key = `${sessionId} ${event.id}`;
    let frame = this.#frames.get(key);
    if (frame === undefined) {
      frame = Buffer.from(JSON.stringify({ type: 'event', sessionId, event }));
      this.#frames.set(key, frame);
      // Maps iterate in insertion order: the first key is the oldest.
      if (this.#frames.size > this.#capacity) this.#frames.delete(this.#frames.keys().next().value as string);
    }
    this.#byEvent.set(event, frame);
    return frame;
  }
}
