export { refusedAddress } from './address-rules.js';
export type { OutboundErrorCode } from './errors.js';
export { OUTBOUND_ERRORS, OutboundError } from './errors.js';
export type { OutboundFetchOptions } from './outbound-fetch.js';
export { createOutboundFetch, guardedLookup, readBodyCapped } from './outbound-fetch.js';
export type { OutboundAnswer, OutboundRequest, OutboundRequestOptions } from './outbound-request.js';
export { createOutboundRequest } from './outbound-request.js';
export type { OutboundPolicy } from './outbound-url.js';
export { checkOutboundUrl, MAX_URL_LENGTH } from './outbound-url.js';
