import { isIP } from 'node:net';
import { refusedAddress } from './address-rules.js';
import { OutboundError } from './errors.js';

/** What an operator allows of tenant-given URLs (both off in production). */
export interface OutboundPolicy {
  /** Plain `http` URLs too, not only `https`. */
  allowHttp: boolean;
  /** Loopback, private and link-local addresses (tests, a private deployment). Metadata addresses stay refused. */
  allowPrivate: boolean;
}

/** The longest URL taken. */
export const MAX_URL_LENGTH = 2_048;

/**
 * Checks a tenant-given URL when it is registered or submitted, before any
 * call: its scheme, no credentials in it, and a host that is not an address
 * the policy refuses (an IP literal, or `localhost`). A host name is checked
 * again when it is resolved, at connect time ({@link createOutboundFetch}).
 * Throws {@link OutboundError} `ERR_URL_REFUSED` saying why.
 */
export function checkOutboundUrl(raw: string, policy: OutboundPolicy): URL {
  const refuse = (why: string): never => {
    throw new OutboundError(
      'ERR_URL_REFUSED',
      `The URL ${JSON.stringify(raw.slice(0, 200))} is refused: ${why}.`,
    );
  };
  if (raw.length > MAX_URL_LENGTH) refuse(`it is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('it is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    refuse(policy.allowHttp ? 'only http and https URLs are allowed' : 'only https URLs are allowed');
  }
  if (url.username || url.password) refuse('credentials in the URL are not allowed; send them as headers');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) !== 0) {
    const why = refusedAddress(host, policy);
    if (why) refuse(why);
  } else if (!policy.allowPrivate && (host === 'localhost' || host.endsWith('.localhost'))) {
    refuse(`${host} is a loopback name`);
  }
  return url;
}
