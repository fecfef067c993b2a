/**
 * A server-sent events parser, per the WHATWG "event stream interpretation"
 * rules: lines end in CRLF, LF or CR (a CR at the end of one chunk and an LF at
 * the start of the next are one line end); a leading BOM is dropped; `:` starts
 * a comment (heartbeats); `data:` lines join with `\n`; `id` persists across
 * messages until changed; an empty line dispatches, and a message without data
 * is not dispatched. Feed it decoded text in chunks of any size.
 */

/** One dispatched message. */
export interface SseMessage {
  /** The last `id:` seen (it persists across messages, as the spec says). */
  id: string | undefined;
  /** The `event:` field, `message` when absent. */
  event: string;
  data: string;
}

export interface SseParserOptions {
  /** Called for a `retry:` field with a valid number of milliseconds. */
  onRetry?: (ms: number) => void;
  /** Called for each comment line (heartbeats), without the leading colon. */
  onComment?: (text: string) => void;
}

export class SseParser {
  private buffer = '';
  private started = false;
  private lastCharWasCr = false;
  private data: string[] = [];
  private eventType = '';
  private lastEventId: string | undefined;
  private readonly options: SseParserOptions;

  constructor(options: SseParserOptions = {}) {
    this.options = options;
  }

  /** Parses a chunk and returns the messages it completed. */
  feed(chunk: string): SseMessage[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.lastCharWasCr && text.startsWith('\n')) text = text.slice(1);
    this.lastCharWasCr = text.endsWith('\r');

    const messages: SseMessage[] = [];
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch !== 0x0a && ch !== 0x0d) continue;
      const line = this.buffer.slice(start, i);
      if (ch === 0x0d && this.buffer.charCodeAt(i + 1) === 0x0a) i++;
      start = i + 1;
      const message = this.line(line);
      if (message) messages.push(message);
    }
    this.buffer = this.buffer.slice(start);
    return messages;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) {
      this.options.onComment?.(line.slice(1).trimStart());
      return undefined;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.options.onRetry?.(Number(value));
        break;
      default:
        // Unknown fields are ignored, as the spec says.
        break;
    }
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const data = this.data;
    const event = this.eventType;
    this.data = [];
    this.eventType = '';
    if (data.length === 0) return undefined;
    return { id: this.lastEventId, event: event || 'message', data: data.join('\n') };
  }
}
