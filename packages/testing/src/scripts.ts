// The entry for plain scripts (`pnpm start`, the benches): the process and Redis helpers without
// the vitest context of the main entry.
export type { SpawnOptions, TestProcess } from './processes.js';
export { killAllSpawned, spawnNode } from './processes.js';
export type { OwnRedis, RedisServerOptions, StartedRedis, TestRedis } from './redis.js';
export { findOnPath, freePort, startOwnRedis, startRedis, startRedisServer, waitForPing } from './redis.js';
export type { ApiProcess, Env, ProcessOptions, Stack, StackOptions } from './stack.js';
export {
  API_MAIN,
  startApiProcess,
  startStack,
  startWorkerProcess,
  WORKER_MAIN,
  WORKER_NODE_FLAGS,
} from './stack.js';
