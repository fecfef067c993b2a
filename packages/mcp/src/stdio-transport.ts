import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { OutboundError } from '@tether/outbound';
import type { SandboxedProcess } from '@tether/tools';

/** Bytes of the server's stderr kept, to say why it ended. */
const STDERR_KEPT = 2_000;

/**
 * The MCP stdio transport (newline-delimited JSON-RPC, framed by the SDK's
 * own `serializeMessage`/`deserializeMessage`) over a program the run started
 * in its sandbox (`startSandboxedServer`), which the SDK's own stdio
 * transport cannot spawn: it knows nothing of bubblewrap, cgroups or the
 * command watchdog. A message longer than `maxMessageBytes` is dropped and
 * reported through {@link oversize}, failing the calls in flight; closing
 * stops the program and everything it started.
 */
export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #start: () => Promise<SandboxedProcess>;
  readonly #maxMessageBytes: number;
  readonly #name: string;
  #oversize = new AbortController();
  #process: SandboxedProcess | undefined;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #dropping = false;
  #stderr = '';
  #closed = false;

  constructor(start: () => Promise<SandboxedProcess>, options: { maxMessageBytes: number; name: string }) {
    this.#start = start;
    this.#maxMessageBytes = options.maxMessageBytes;
    this.#name = options.name;
  }

  /** Aborted, with the error as reason, when a message passes the cap (then a new one for later messages). */
  get oversize(): AbortSignal {
    return this.#oversize.signal;
  }

  /** The end of what the server wrote on stderr (why it failed, often). */
  get stderr(): string {
    return this.#stderr;
  }

  async start(): Promise<void> {
    const server = await this.#start();
    this.#process = server;
    server.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
    server.stderr.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    void server.ended.then((result) => {
      if (!this.#closed) {
        const how = result.exitSignal ?? `exit code ${result.exitCode}`;
        const why =
          this.#stderr.trim() === '' ? '' : `: ${this.#stderr.trim().split('\n').slice(-3).join(' | ')}`;
        this.onerror?.(new Error(`the MCP server ${this.#name} ended (${how})${why}`));
      }
      this.#closed = true;
      this.onclose?.();
    });
  }

  #read(chunk: Buffer): void {
    let start = 0;
    for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, start)) {
      this.#take(chunk.subarray(start, at), true);
      start = at + 1;
    }
    if (start < chunk.length) this.#take(chunk.subarray(start), false);
  }

  /** A piece of a line; `end` when the line ends with it. */
  #take(piece: Buffer, end: boolean): void {
    if (!this.#dropping) {
      this.#pendingBytes += piece.length;
      if (this.#pendingBytes > this.#maxMessageBytes) {
        this.#dropping = true;
        this.#pending = [];
        const error = new OutboundError(
          'ERR_RESPONSE_TOO_LARGE',
          `A message from the MCP server ${this.#name} is larger than ${this.#maxMessageBytes} bytes.`,
        );
        const inFlight = this.#oversize;
        this.#oversize = new AbortController();
        inFlight.abort(error);
        this.onerror?.(error);
      } else {
        this.#pending.push(piece);
      }
    }
    if (!end) return;
    const line = this.#dropping ? '' : Buffer.concat(this.#pending).toString('utf8');
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#dropping = false;
    if (line.trim() === '') return;
    try {
      this.onmessage?.(deserializeMessage(line));
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#process?.stdin;
    if (!stdin || this.#closed)
      return Promise.reject(new Error(`the MCP server ${this.#name} is not running`));
    return new Promise((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#process?.stop();
  }
}
