export {
  testRedisClusterNodes,
  testRedisEnv,
  testRedisTarget,
  testRedisUrl,
  uniquePrefix,
} from './context.js';
export type {
  AnthropicBehavior,
  AnthropicBlock,
  AnthropicEvent,
  AnthropicToolCall,
  AnthropicUsage,
  FakeAnthropicOptions,
} from './fake-anthropic.js';
export {
  anthropicError,
  anthropicErrorEvent,
  anthropicText,
  anthropicToolUse,
  DEFAULT_ANTHROPIC_USAGE,
  FakeAnthropicServer,
  messageEvents,
  startFakeAnthropic,
} from './fake-anthropic.js';
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
export { inTerminal, killAllSpawned, spawnNode, spawnProgram } from './processes.js';
export type { OwnRedis, RedisSource, StartRedisOptions, TestRedis, TestRedisCluster } from './redis.js';
export {
  freePort,
  REDIS_HOW_TO,
  startOwnRedis,
  startRedis,
  startRedisCluster,
  waitForPing,
} from './redis.js';
