import type { RedisClient } from './connection.js';
import type { TetherKeys } from './keys.js';

/** What every part of the run store works with: the connection, the key names and the store's limits. */
export interface StoreContext {
  readonly redis: RedisClient;
  readonly keys: TetherKeys;
  /** Events kept per run (approximate, `XADD MAXLEN ~`). */
  readonly eventMaxLength: number;
  /** How long an ended run's keys stay, in seconds. */
  readonly retentionSeconds: number;
  readonly sessionTtlSeconds: number;
}
