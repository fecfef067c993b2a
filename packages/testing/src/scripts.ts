// The entry for plain scripts (`pnpm start`, the benches) and the tests' process helpers: starting
// Tether's processes and Redis, without the vitest context of the main entry.
export type { TestProcess } from './processes.js';
export { spawnNode } from './processes.js';
export type { TestRedisCluster } from './redis.js';
export { findOnPath, freePort, startOwnRedis, startRedis, startRedisCluster, waitForPing } from './redis.js';
export type { ApiProcess, Env, ProcessOptions, Stack, StackOptions, WorkerEntry } from './stack.js';
export {
  API_MAIN,
  startApiProcess,
  startStack,
  startWorkerProcess,
  WORKER_MAIN,
  WORKER_NODE_FLAGS,
} from './stack.js';
