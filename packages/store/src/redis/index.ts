export type { RedisClient, RedisConnectionOptions, RedisMode, RedisNode } from './connection.js';
export {
  COMMAND_TIMEOUT_MS,
  CONNECT_TIMEOUT_MS,
  clusterOptions,
  connectionReady,
  createRedisConnection,
  isCluster,
  isRedisConnectionError,
  RECONNECT_MAX_DELAY_MS,
  reconnectDelay,
  redisOptions,
} from './connection.js';
export type {
  BatchKeys,
  MemoryKeys,
  RunKeys,
  ScheduleKeys,
  SessionKeys,
  TenantSlotKeys,
  TenantUsageKeys,
  TetherKeys,
  WebhookKeys,
} from './keys.js';
export { createKeys, MAX_SHARDS, QUEUE_NAME, SCHEDULE_QUEUE_NAME, WEBHOOK_QUEUE_NAME } from './keys.js';
export type {
  BreakerState,
  RedisBreakerOptions,
  RedisOutage,
  WatchedConnection,
} from './redis-breaker.js';
export { RedisBreaker } from './redis-breaker.js';
export type { PipelineReply } from './slot-pipelines.js';
export { keySlot, SlotPipelines } from './slot-pipelines.js';
export { TenantCache, type TenantCacheOptions } from './tenant-cache.js';
