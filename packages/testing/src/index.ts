export { testRedisUrl, uniquePrefix } from './context.js';
export type { RedisSource, StartRedisOptions, TestRedis } from './redis.js';
export { freePort, REDIS_HOW_TO, startRedis, waitForPing } from './redis.js';
