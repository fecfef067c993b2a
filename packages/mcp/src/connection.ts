/**
 * Connections to MCP servers, through the official SDK's `Client`:
 *
 * - a remote server over Streamable HTTP, or the legacy HTTP+SSE transport
 *   when Streamable HTTP fails (as the SDK's guide does it); every request
 *   goes through `@tether/outbound`'s fetch, so the resolved address is
 *   checked at each connection, and a response body passes neither the
 *   call's time nor the byte cap. No redirect is followed, by anyone: the
 *   SDK's transports would follow one within the server's origin themselves,
 *   with the run's headers ({@link RedirectRefused}). Tether does not
 *   open Streamable HTTP's optional notification stream (its GET answers 405
 *   here, which the SDK takes as "none"): responses come on each POST. Over
 *   legacy SSE every message comes on one stream, capped per event instead.
 * - an operator's stdio server, started in the run's sandbox
 *   ({@link SandboxStdioTransport}).
 *
 * A response that passes the cap fails the calls in flight at once, with
 * that error ({@link McpConnection.oversize}), rather than leaving them to
 * their timeout.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createOutboundFetch, OutboundError, type OutboundPolicy } from '@tether/outbound';

/** The bounds of a run's MCP traffic (the worker's `TETHER_MCP_*` settings). */
export interface McpLimits {
  /** The SSRF rules of remote servers. */
  policy: OutboundPolicy;
  /** One tool call, from request to result (ms). */
  callTimeoutMs: number;
  /** Connecting (the handshake) and listing the tools (ms). */
  connectTimeoutMs: number;
  /** Bytes of one response (one POST's body; one event of a legacy SSE stream; one stdio message). */
  maxResponseBytes: number;
}

/** A connected client, and what its connection saw. */
export interface McpConnection {
  client: Client;
  transport: 'streamable-http' | 'sse' | 'stdio';
  /**
   * Aborted, with the error as reason, when a response passes the cap: the
   * calls in flight end at once. Read it as a call starts: each call gets
   * the signal of the calls in flight with it.
   */
  readonly oversize: AbortSignal;
  /** Whether the connection closed (the server went away): the next call connects again. */
  readonly closed: boolean;
  close(): Promise<void>;
}

const CLIENT_INFO = { name: 'tether', version: '0.1.0' };

/** The longest timer Node takes: as good as no timeout, for the legacy SSE stream. */
const FOREVER_MS = 2 ** 31 - 1;

/** Calls `onError` with the error that ends a response's body, before the body's reader sees it. */
function observeBody(response: Response, onError: (error: unknown) => void): Response {
  if (!response.body) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        onError(error);
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * An event stream whose events may each hold at most `maxBytes` (an event ends
 * at a blank line), however long the stream: for the legacy SSE transport,
 * where every response of a session comes on one stream.
 */
function capEvents(response: Response, maxBytes: number, what: string): Response {
  if (!response.body) return response;
  let size = 0;
  let line = 0;
  const capped = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        for (const byte of chunk) {
          size++;
          if (byte === 10) {
            if (line === 0) size = 0;
            line = 0;
          } else if (byte !== 13) {
            line++;
          }
          if (size > maxBytes) {
            controller.error(
              new OutboundError(
                'ERR_RESPONSE_TOO_LARGE',
                `An event from ${what} is larger than ${maxBytes} bytes.`,
              ),
            );
            return;
          }
        }
        controller.enqueue(chunk);
      },
    }),
  );
  return new Response(capped, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** Tracks the cap's verdict for one connection: a response past it fails the calls in flight then. */
class Oversize {
  #controller = new AbortController();

  /** The signal of the calls in flight now. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  report(error: unknown): void {
    if (error instanceof OutboundError && error.code === 'ERR_RESPONSE_TOO_LARGE') {
      const inFlight = this.#controller;
      this.#controller = new AbortController();
      inFlight.abort(error);
    }
  }
}

/**
 * A redirect answer, refused: whoever followed it would send the run's
 * headers (secrets, often) to its target. Its message names the status and
 * the `Location`, both URLs shown without credentials, query or fragment.
 */
class RedirectRefused extends Error {
  constructor(url: string, status: number, location: string | null) {
    const to =
      location !== null && URL.canParse(location, url)
        ? `a redirect to ${shown(new URL(location, url))}`
        : 'a redirect without a usable Location';
    super(
      `The MCP server at ${shown(new URL(url))} answered ${status} with ${to}; Tether does not follow redirects (the run's headers would go with it). Give the server's final URL.`,
    );
    this.name = 'RedirectRefused';
  }
}

/** A URL as an error shows it: without what may hold a secret (credentials, query, fragment). */
function shown(url: URL): string {
  const copy = new URL(url);
  copy.username = copy.password = copy.search = copy.hash = '';
  return copy.href;
}

/**
 * The response, unless it is a redirect (any 3xx): that throws
 * {@link RedirectRefused}, reported first, so that the error reaches the
 * connection even when the SDK's event source swallows it (the legacy SSE GET).
 */
async function refuseRedirect(
  response: Response,
  url: string,
  report: (error: RedirectRefused) => void,
): Promise<Response> {
  if (response.status < 300 || response.status > 399) return response;
  await response.body?.cancel().catch(() => undefined);
  const error = new RedirectRefused(url, response.status, response.headers.get('location'));
  report(error);
  throw error;
}

/**
 * The fetch of one remote connection: the call's bounds, the oversize verdict
 * reported, and a redirect refused ({@link refuseRedirect}) and reported to `onRedirect`.
 */
function remoteFetch(
  limits: McpLimits,
  oversize: Oversize,
  transport: 'streamable-http' | 'sse',
  onRedirect: (error: RedirectRefused) => void,
): typeof fetch {
  // The SDK's own timeout fires first, with the MCP error; this one is the outer bound.
  const post = createOutboundFetch(limits.policy, {
    timeoutMs: limits.callTimeoutMs + 2_000,
    maxResponseBytes: limits.maxResponseBytes,
  });
  const stream = createOutboundFetch(limits.policy, {
    timeoutMs: FOREVER_MS,
    maxResponseBytes: Number.MAX_SAFE_INTEGER,
  });
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const method = (init?.method ?? 'GET').toUpperCase();
    if (method === 'GET' && transport === 'streamable-http') {
      return new Response(null, { status: 405, statusText: 'Method Not Allowed' });
    }
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (method === 'GET') {
      const response = await refuseRedirect(await stream(input, init), url, onRedirect);
      return observeBody(capEvents(response, limits.maxResponseBytes, url), (error) =>
        oversize.report(error),
      );
    }
    let response: Response;
    try {
      response = await post(input, init);
    } catch (error) {
      oversize.report(error);
      throw error;
    }
    return observeBody(await refuseRedirect(response, url, onRedirect), (error) => oversize.report(error));
  }) as typeof fetch;
}

function connection(
  client: Client,
  transport: McpConnection['transport'],
  oversize: { readonly signal: AbortSignal },
  onClose?: () => Promise<void>,
): McpConnection {
  let closed = false;
  client.onclose = () => {
    closed = true;
  };
  return {
    client,
    transport,
    get oversize() {
      return oversize.signal;
    },
    get closed() {
      return closed;
    },
    async close() {
      closed = true;
      await onClose?.().catch(() => undefined);
      await client.close().catch(() => undefined);
    },
  };
}

async function connectWith(transport: Transport, limits: McpLimits, signal: AbortSignal): Promise<Client> {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  try {
    // A signal of its own: the SDK never removes the listener it adds to a request's signal.
    await client.connect(transport, { timeout: limits.connectTimeoutMs, signal: AbortSignal.any([signal]) });
    return client;
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Connects to a remote server: Streamable HTTP first, the legacy SSE
 * transport when that fails for any reason but the outbound rules' (a refused
 * address, the time, the cap) or a redirect. Both failing, the error names
 * both. Neither transport follows a redirect itself (`redirectPolicy:
 * 'follow'` leaves them to our fetch, which never follows one).
 */
export async function connectRemote(
  url: string,
  headers: Readonly<Record<string, string>>,
  limits: McpLimits,
  signal: AbortSignal,
): Promise<McpConnection> {
  const target = new URL(url);
  const requestInit = { headers: { ...headers } };
  // The first redirect met while connecting: the error to give, whatever the SDK made of it.
  let redirect: RedirectRefused | undefined;
  const onRedirect = (error: RedirectRefused) => {
    redirect ??= error;
  };
  const streamableOversize = new Oversize();
  const streamable = new StreamableHTTPClientTransport(target, {
    requestInit,
    fetch: remoteFetch(limits, streamableOversize, 'streamable-http', onRedirect),
    redirectPolicy: 'follow',
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1_000,
      maxReconnectionDelay: 1_000,
      reconnectionDelayGrowFactor: 1,
    },
  });
  let first: unknown;
  try {
    const client = await connectWith(streamable, limits, signal);
    return connection(client, 'streamable-http', streamableOversize, () => streamable.terminateSession());
  } catch (error) {
    if (error instanceof OutboundError || signal.aborted) throw error;
    if (redirect) throw redirect;
    first = error;
  }
  const sseOversize = new Oversize();
  const sse = new SSEClientTransport(target, {
    requestInit,
    fetch: remoteFetch(limits, sseOversize, 'sse', onRedirect),
    redirectPolicy: 'follow',
  });
  try {
    return connection(await connectWith(sse, limits, signal), 'sse', sseOversize);
  } catch (error) {
    if (error instanceof OutboundError || signal.aborted) throw error;
    if (redirect) throw redirect;
    throw new Error(`Streamable HTTP: ${message(first)}; legacy SSE: ${message(error)}`, { cause: first });
  }
}

/** Connects over an already made transport (an operator's stdio server's). */
export async function connectTransport(
  transport: Transport & { oversize?: AbortSignal },
  limits: McpLimits,
  signal: AbortSignal,
): Promise<McpConnection> {
  const client = await connectWith(transport, limits, signal);
  // The transport keeps the cap's verdict itself.
  const none = new AbortController().signal;
  return connection(client, 'stdio', {
    get signal() {
      return transport.oversize ?? none;
    },
  });
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
