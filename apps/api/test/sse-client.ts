/**
 * A raw SSE client over node:http for tests: parses frames as they arrive and
 * lets a test await the events it expects (never a sleep).
 */
import { request } from 'node:http';
import type { RunEvent } from '@tether/protocol';

export interface SseFrame {
  id?: string;
  event?: string;
  data: string;
}

export interface SseConnection {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body of a non-200 answer. */
  body: string;
  frames: SseFrame[];
  /** The events, parsed from each frame's `data:`. */
  events: RunEvent[];
  comments: string[];
  /** Resolves when the server ends the response ('end') or the connection breaks ('close'). */
  ended: Promise<'end' | 'close'>;
  /** Resolves once `predicate` holds for an event received (now or later); rejects if the stream ends first. */
  waitFor(predicate: (event: RunEvent) => boolean, timeoutMs?: number): Promise<RunEvent>;
  /** Resolves once a comment line such as `: ping` arrives. */
  waitForComment(timeoutMs?: number): Promise<string>;
  /** Stops reading from the socket (a slow client). */
  pause(): void;
  close(): void;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } });
    req.on('error', reject);
    req.on('response', (res) => {
      const frames: SseFrame[] = [];
      const events: RunEvent[] = [];
      const comments: string[] = [];
      const waiters = new Set<() => void>();
      let buffer = '';
      let body = '';
      let over: 'end' | 'close' | undefined;
      const notify = () => {
        for (const waiter of [...waiters]) waiter();
      };
      let endedResolve: (how: 'end' | 'close') => void = () => {};
      const ended = new Promise<'end' | 'close'>((done) => {
        endedResolve = done;
      });
      const finish = (how: 'end' | 'close') => {
        if (over) return;
        over = how;
        endedResolve(how);
        notify();
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          body += chunk;
          return;
        }
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame: SseFrame = { data: '' };
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) frame.id = line.slice(4);
            else if (line.startsWith('event: ')) frame.event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) {
            frame.data = data.join('\n');
            frames.push(frame);
            events.push(JSON.parse(frame.data) as RunEvent);
          }
        }
        notify();
      });
      res.on('end', () => finish('end'));
      res.on('close', () => finish('close'));
      res.on('error', () => finish('close'));

      const wait = <T>(check: () => T | undefined, what: string, timeoutMs: number): Promise<T> =>
        new Promise((done, fail) => {
          const timer = setTimeout(() => {
            waiters.delete(attempt);
            fail(
              new Error(
                `timed out after ${timeoutMs} ms waiting for ${what}; got ${events.map((e) => e.type).join(', ')}`,
              ),
            );
          }, timeoutMs);
          const attempt = () => {
            const found = check();
            if (found !== undefined) {
              clearTimeout(timer);
              waiters.delete(attempt);
              done(found);
            } else if (over) {
              clearTimeout(timer);
              waiters.delete(attempt);
              fail(new Error(`stream ${over}ed before ${what}; got ${events.map((e) => e.type).join(', ')}`));
            }
          };
          waiters.add(attempt);
          attempt();
        });

      const connection: SseConnection = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        get body() {
          return body;
        },
        frames,
        events,
        comments,
        ended,
        waitFor: (predicate, timeoutMs = 10_000) => wait(() => events.find(predicate), 'an event', timeoutMs),
        waitForComment: (timeoutMs = 10_000) => wait(() => comments[0], 'a comment', timeoutMs),
        pause: () => res.pause(),
        close: () => {
          req.destroy();
          res.destroy();
        },
      };
      if (res.statusCode !== 200) {
        res.on('end', () => resolve(connection));
        return;
      }
      resolve(connection);
    });
    req.end();
  });
}
