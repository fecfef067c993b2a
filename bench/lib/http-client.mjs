// A lean HTTP/1.1 keep-alive client for load generation, as wrk does it: one request at a time per
// connection, written as prebuilt bytes; the answer is parsed only as far as the status line, the
// Content-Length and the headers asked for. On a 2-core machine node:http's client costs the load
// generator about as much CPU as the API spends on a request, CPU the system under test then lacks.
import { connect } from 'node:net';

export class LeanConnection {
  #socket;
  #buffer = '';
  #pending;
  #ready;

  constructor(port, host = '127.0.0.1') {
    this.#socket = connect(port, host);
    this.#socket.setNoDelay(true);
    this.#ready = new Promise((resolve, reject) => {
      this.#socket.once('connect', resolve);
      this.#socket.once('error', reject);
    });
    this.#socket.on('data', (chunk) => this.#onData(chunk));
    this.#socket.on('error', (error) => this.#fail(error));
    this.#socket.on('close', () => this.#fail(new Error('connection closed')));
  }

  /** Sends `bytes` (a whole request); resolves with `{ status, headers, body }` (header names lowercase). */
  async send(bytes, wantHeaders = []) {
    await this.#ready;
    if (this.#pending) throw new Error('one request at a time per connection');
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject, wantHeaders };
      this.#socket.write(bytes);
    });
  }

  close() {
    this.#socket.destroy();
  }

  #onData(chunk) {
    this.#buffer += chunk.toString('latin1');
    const headEnd = this.#buffer.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = this.#buffer.slice(0, headEnd);
    const lengthMatch = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!lengthMatch) return this.#fail(new Error(`an answer without Content-Length: ${head}`));
    const end = headEnd + 4 + Number(lengthMatch[1]);
    if (this.#buffer.length < end) return;
    const body = this.#buffer.slice(headEnd + 4, end);
    this.#buffer = this.#buffer.slice(end);
    const pending = this.#pending;
    this.#pending = undefined;
    if (!pending) return;
    const headers = {};
    for (const name of pending.wantHeaders) {
      headers[name] = new RegExp(`\\r\\n${name}: *([^\\r]*)`, 'i').exec(head)?.[1];
    }
    pending.resolve({ status: Number(head.slice(9, 12)), headers, body });
  }

  #fail(error) {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(error);
  }
}

/** The bytes of a POST with a JSON body. */
export function postRequest({ host, path, headers, body }) {
  const payload = Buffer.from(body);
  const lines = [`POST ${path} HTTP/1.1`, `Host: ${host}`, 'Content-Type: application/json'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${payload.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), payload]);
}
