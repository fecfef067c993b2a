import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent, fetch as undiciFetch } from 'undici';
import { refusedAddress } from './address-rules.js';
import { OutboundError } from './errors.js';
import { checkOutboundUrl, type OutboundPolicy } from './outbound-url.js';

/** How {@link createOutboundFetch} calls. */
export interface OutboundFetchOptions {
  /** The whole call, body included (ms). Default 10 s. */
  timeoutMs?: number;
  /** The most bytes of a response body read; more fails the body's stream. Default 1 MiB. */
  maxResponseBytes?: number;
  /** Resolves host names (default `dns.lookup`); tests give one that answers what they need. */
  lookup?: typeof dnsLookup;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `fetch` for tenant-given URLs (webhook endpoints, MCP servers):
 *
 * 1. the URL passes {@link checkOutboundUrl};
 * 2. the address a host name resolves to is checked when the connection is
 *    made, so a name that resolves to a private address (DNS rebinding) gets
 *    nowhere;
 * 3. redirects are never followed (a 3xx answer is returned as it is);
 * 4. the whole call, body included, ends after `timeoutMs`
 *    (`ERR_OUTBOUND_TIMEOUT`), and a body of more than `maxResponseBytes`
 *    fails its stream (`ERR_RESPONSE_TOO_LARGE`).
 */
export function createOutboundFetch(
  policy: OutboundPolicy,
  options: OutboundFetchOptions = {},
): typeof fetch {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBytes = options.maxResponseBytes ?? 1024 * 1024;
  const resolve = options.lookup ?? dnsLookup;
  const dispatcher = new Agent({ connect: { lookup: guardedLookup(policy, resolve) as never } });

  return (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const target = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    checkOutboundUrl(target, policy);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = (await undiciFetch(
        input as never,
        {
          ...(init as object),
          redirect: 'manual',
          signal,
          dispatcher,
        } as never,
      )) as unknown as Response;
    } catch (error) {
      throw callError(error, timeout, target, timeoutMs);
    }
    if (!response.body) return response;
    let read = 0;
    const capped = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          read += chunk.byteLength;
          if (read > maxBytes) {
            controller.error(
              new OutboundError(
                'ERR_RESPONSE_TOO_LARGE',
                `The answer of ${target} is larger than ${maxBytes} bytes.`,
              ),
            );
            return;
          }
          controller.enqueue(chunk);
        },
      }),
      { signal },
    );
    return new Response(capped as ReadableStream, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers as Headers,
    });
  }) as typeof fetch;
}

/**
 * A `lookup` for undici's `connect` that resolves with `resolve` and refuses, with
 * `ERR_URL_REFUSED`, a name any of whose addresses the policy refuses: the check at connect
 * time, which DNS rebinding cannot get through.
 */
export function guardedLookup(policy: OutboundPolicy, resolve: typeof dnsLookup = dnsLookup) {
  return (hostname: string, lookupOptions: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses as LookupAddress[];
      for (const { address } of list) {
        const why = refusedAddress(address, policy);
        if (why) {
          return callback(
            new OutboundError('ERR_URL_REFUSED', `The host ${hostname} is refused: it resolves to ${why}.`),
            [],
          );
        }
      }
      if (lookupOptions.all) return callback(null, list);
      const first = list[0];
      if (!first)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** The error a failed call throws: ours (refused, timed out) when it is one, else the original. */
function callError(error: unknown, timeout: AbortSignal, target: string, timeoutMs: number): unknown {
  if (timeout.aborted) {
    return new OutboundError('ERR_OUTBOUND_TIMEOUT', `${target} did not answer within ${timeoutMs} ms.`, {
      cause: error,
    });
  }
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    if (cause instanceof OutboundError) return cause;
    cause = cause.cause;
  }
  return error;
}

/** Reads at most `maxBytes` of a response body as text, and drops the rest (`truncated`). */
export async function readBodyCapped(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: '', truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - size;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } catch (error) {
    if (!(error instanceof OutboundError && error.code === 'ERR_RESPONSE_TOO_LARGE')) throw error;
    truncated = true;
  } finally {
    await reader.cancel().catch(() => {});
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}
