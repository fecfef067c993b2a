export type { QueueErrorCode } from './errors.js';
export { QUEUE_ERROR_CODES, QUEUE_ERRORS, QueueError } from './errors.js';
