export type { ChildResult } from '@tether/protocol';
export type { QueueErrorCode } from './errors.js';
export { QUEUE_ERROR_CODES, QUEUE_ERRORS, QueueError } from './errors.js';
export type { LeaseOptions } from './leases/lease.js';
export { Lease } from './leases/lease.js';
export type {
  McpServerStoreOptions,
  McpServerWrite,
  StoredMcpServer,
} from './mcp-servers/mcp-server-store.js';
export { McpServerStore, mcpServerView } from './mcp-servers/mcp-server-store.js';
export { MemoryIndex, tokenize } from './memory/memory-index.js';
export type { MemoryServiceOptions } from './memory/memory-service.js';
export { MemoryService, memoryEntry } from './memory/memory-service.js';
export type { MemoryListing, MemoryStoreOptions } from './memory/memory-store.js';
export {
  DEFAULT_MEMORY_MAX_BYTES,
  DEFAULT_MEMORY_MAX_ENTRIES,
  FULL_SCOPE_OLDEST,
  MemoryStore,
  preview,
} from './memory/memory-store.js';
export type { RedisClient, RedisConnectionOptions, RedisMode, RedisNode } from './redis/connection.js';
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
} from './redis/connection.js';
export type {
  MemoryKeys,
  RunKeys,
  SessionKeys,
  TenantSlotKeys,
  TetherKeys,
  WebhookKeys,
} from './redis/keys.js';
export { createKeys, MAX_SHARDS, QUEUE_NAME, WEBHOOK_QUEUE_NAME } from './redis/keys.js';
export type {
  BreakerState,
  RedisBreakerOptions,
  RedisOutage,
  WatchedConnection,
} from './redis/redis-breaker.js';
export { RedisBreaker } from './redis/redis-breaker.js';
export type { PipelineReply } from './redis/slot-pipelines.js';
export { keySlot, SlotPipelines } from './redis/slot-pipelines.js';
export type { ChildOutcome } from './runs/crew-store.js';
export {
  CHILD_SUMMARY_MAX_CHARS,
  CHILD_TIMEOUT_CODE,
  capSummary,
  childOutcome,
  outcomeOfRecord,
} from './runs/crew-store.js';
export type {
  EngineAttempt,
  Recorded,
  RunEnd,
  RunEngineOptions,
  RunJobs,
  WaitOpen,
  WaitRefusal,
} from './runs/engine.js';
export { CHILDREN_GRACE_MS, RunEngine } from './runs/engine.js';
export type { EventListener } from './runs/event-hub.js';
export { EventHub } from './runs/event-hub.js';
export type { CheckInvariantsOptions, InvariantRule, InvariantViolation } from './runs/invariants.js';
export {
  checkInvariants,
  DEFAULT_INVARIANT_GRACE_MS,
  formatViolations,
  INVARIANT_RULES,
  settledInvariants,
} from './runs/invariants.js';
export type { RunJobData } from './runs/jobs.js';
export {
  backoffStrategy,
  baseDelay,
  promoteJob,
  RETRY_BACKOFF_TYPE,
  RetryLater,
  retryDelayMs,
} from './runs/jobs.js';
export type { ListOptions } from './runs/records.js';
export { LIST_SCAN_MAX, METADATA_INDEX_VALUE_MAX } from './runs/records.js';
export { parsePublishedEvent } from './runs/replies.js';
export type { RunServiceOptions, SessionLink } from './runs/run-service.js';
export { createRunQueue, hashBody, RunService } from './runs/run-service.js';
export type {
  AnswerResult,
  ChildLink,
  ClaimResult,
  CrewSpec,
  Delegation,
  EndedRun,
  NewDelegation,
  NewRun,
  NewWaitpoint,
  RequestKind,
  RequestOutcome,
  ResolveResult,
  RunRecord,
  RunSpec,
  RunStoreOptions,
  StoredBody,
  ToolCallOutcome,
  ToolOutputResult,
  Waitpoint,
  WaitpointState,
} from './runs/run-store.js';
export { DEFAULT_SESSION_TTL_S, RunStore } from './runs/run-store.js';
export { toolCallOutcome } from './runs/waitpoint-store.js';
export type { SessionEvent, SessionFollowerOptions } from './sessions/session-follower.js';
export {
  asSessionEvent,
  parseSessionCursor,
  readSessionEvents,
  SessionFollower,
  sessionCursor,
} from './sessions/session-follower.js';
export type { SessionRecord, SessionServiceOptions } from './sessions/session-service.js';
export { SessionService } from './sessions/session-service.js';
export type { SkillIndex, SkillLimits, SkillSnapshot, SkillStoreOptions } from './skills/skill-store.js';
export { SkillStore } from './skills/skill-store.js';
export type { SlotTaken, TenantSlotsOptions } from './tenant-slots/tenant-slots.js';
export { TenantSlots } from './tenant-slots/tenant-slots.js';
export type { WebhookDispatcherOptions } from './webhooks/webhook-dispatcher.js';
export { answerTokenHash, newAnswerToken, WebhookDispatcher } from './webhooks/webhook-dispatcher.js';
export type {
  AttemptOutcome,
  DeliveryRecord,
  EndpointRecord,
  PumpJobData,
  Sealer,
  Take,
  TakenDelivery,
  WebhookStoreOptions,
} from './webhooks/webhook-store.js';
export {
  createWebhookQueue,
  DEFAULT_WEBHOOK_SETTINGS,
  deliveryView,
  pumpJobId,
  WAKE_LEASE_MS,
  WebhookStore,
  webhookView,
} from './webhooks/webhook-store.js';
