export type { LeaseOptions } from './lease.js';
export { Lease } from './lease.js';
