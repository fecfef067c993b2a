/**
 * What the fake model servers share (the fake OpenAI-compatible one and the
 * fake Anthropic one): a real HTTP server on a free port of 127.0.0.1, a queue
 * of behaviours a test scripts (one per coming request), every request
 * recorded (headers, parsed body, arrival time, and a promise of its connection
 * closing), and the small pieces of writing a response or an event stream.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/** A request as the server received it. */
export interface RecordedRequest {
  /** From 0, in arrival order. */
  index: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the raw text when it was not JSON). */
  body: unknown;
  /** `performance.now()` when the body had arrived. */
  receivedAt: number;
  /** Resolves when the connection of this request closes (the client went away, or the answer ended). */
  closed: Promise<void>;
}

/**
 * A fake server. `start()` it, `enqueue` behaviours, point a client at
 * `baseURL`, `close()` it. A subclass answers each request in `respond`,
 * taking its behaviour with `next()`.
 */
export abstract class FakeModelServer<Behavior> {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: Behavior[] = [];
  private readonly waiters: Array<{ count: number; resolve: () => void }> = [];
  private readonly server: Server;
  private url: string | undefined;

  /** `root` is appended to the server's address to make `baseURL` (`/v1`, or `` for none). */
  constructor(private readonly root: string) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  /** Listens on a free port of 127.0.0.1. */
  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}${this.root}`;
    return this;
  }

  /** The API root a client is given as its `baseURL`. */
  get baseURL(): string {
    if (!this.url) throw new Error(`${this.constructor.name}: call start() first`);
    return this.url;
  }

  /** Queues behaviours, one per coming request, in order. */
  enqueue(...behaviors: Behavior[]): this {
    this.queue.push(...behaviors);
    return this;
  }

  /** How many queued behaviours no request has taken yet. */
  get pending(): number {
    return this.queue.length;
  }

  /** Resolves once `count` requests have arrived (at once if they already have). */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  /** Closes every connection (hanging ones included) and stops listening. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Answers one request (already recorded). */
  protected abstract respond(request: RecordedRequest, res: ServerResponse): Promise<void>;

  /** The behaviour for this request, taken off the queue. */
  protected next(): Behavior | undefined {
    return this.queue.shift();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    const text = await readBody(req);
    const request: RecordedRequest = {
      index: this.requests.length,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: parseJson(text),
      receivedAt: performance.now(),
      closed,
    };
    this.requests.push(request);
    for (const waiter of this.waiters.filter((w) => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    await this.respond(request, res);
  }
}

/** `text` in `pieces` roughly equal parts (none for an empty text). */
export function split(text: string, pieces: number): string[] {
  if (text === '') return [];
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, pieces)));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Sends the headers of a Server-Sent Events stream at once. */
export function startEventStream(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** Writes and waits until the bytes are handed to the socket, so a drop comes after them. */
export function write(res: ServerResponse, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    res.write(data, (error) => (error ? reject(error) : resolve()));
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
