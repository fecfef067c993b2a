export { testRedisUrl, uniquePrefix } from './context.js';
export type {
  FakeBehavior,
  FakeChunk,
  FakeDelta,
  FakeOpenAIOptions,
  FakeStreamItem,
  FakeToolCall,
  FakeToolCallDelta,
  FakeUsage,
  RecordedRequest,
} from './fake-openai.js';
export {
  DEFAULT_FAKE_USAGE,
  FakeOpenAIServer,
  startFakeOpenAI,
  streamText,
  streamToolCalls,
  textChunks,
  toolCallChunks,
} from './fake-openai.js';
export type { SpawnOptions, TestProcess, TestTerminal } from './processes.js';
export { inTerminal, killAllSpawned, spawnNode } from './processes.js';
export type {
  OwnRedis,
  RedisServerOptions,
  RedisSource,
  StartedRedis,
  StartRedisOptions,
  TestRedis,
} from './redis.js';
export {
  findOnPath,
  freePort,
  REDIS_HOW_TO,
  startOwnRedis,
  startRedis,
  startRedisServer,
  waitForPing,
} from './redis.js';
export type { ApiProcess, ProcessOptions, Stack, StackOptions } from './stack.js';
export {
  API_MAIN,
  startApiProcess,
  startStack,
  startWorkerProcess,
  WORKER_MAIN,
  WORKER_NODE_FLAGS,
} from './stack.js';
