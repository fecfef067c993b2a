import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The longest `X-Request-Id` a client may choose. */
export const REQUEST_ID_MAX_LENGTH = 128;

/** 1 to 128 printable ASCII characters: no spaces, no control characters, nothing to forge a log line with. */
const CLIENT_ID = new RegExp(`^[\\x21-\\x7e]{1,${REQUEST_ID_MAX_LENGTH}}$`);

/**
 * A request's id (every log line of the request, and `X-Request-Id` in the
 * answer): the client's own `X-Request-Id` when it is 1 to 128 printable ASCII
 * characters (0x21 to 0x7e), else a random UUID. Unique across API instances,
 * unlike a per-process counter.
 */
export function requestIdOf(request: { headers: IncomingHttpHeaders }): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_ID.test(sent) ? sent : randomUUID();
}
