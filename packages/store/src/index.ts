export type { ChildResult } from '@tether/protocol';
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
export type { ChildOutcome } from './crew-store.js';
export {
  CHILD_SUMMARY_MAX_CHARS,
  CHILD_TIMEOUT_CODE,
  capSummary,
  childOutcome,
  outcomeOfRecord,
} from './crew-store.js';
export type {
  EngineAttempt,
  Recorded,
  RunEnd,
  RunEngineOptions,
  RunJobs,
  WaitOpen,
  WaitRefusal,
} from './engine.js';
export { CHILDREN_GRACE_MS, RunEngine } from './engine.js';
export type { QueueErrorCode } from './errors.js';
export { QUEUE_ERROR_CODES, QUEUE_ERRORS, QueueError } from './errors.js';
export type { EventListener } from './event-hub.js';
export { EventHub } from './event-hub.js';
export type { CheckInvariantsOptions, InvariantRule, InvariantViolation } from './invariants.js';
export {
  checkInvariants,
  DEFAULT_INVARIANT_GRACE_MS,
  formatViolations,
  INVARIANT_RULES,
  settledInvariants,
} from './invariants.js';
export type { RunJobData } from './jobs.js';
export {
  backoffStrategy,
  baseDelay,
  promoteJob,
  RETRY_BACKOFF_TYPE,
  RetryLater,
  retryDelayMs,
} from './jobs.js';
export type { MemoryKeys, RunKeys, SessionKeys, TenantSlotKeys, TetherKeys, WebhookKeys } from './keys.js';
export { createKeys, MAX_SHARDS, QUEUE_NAME, WEBHOOK_QUEUE_NAME } from './keys.js';
export type { LeaseOptions } from './lease.js';
export { Lease } from './lease.js';
export type { McpServerStoreOptions, McpServerWrite, StoredMcpServer } from './mcp-server-store.js';
export { McpServerStore, mcpServerView } from './mcp-server-store.js';
export { MemoryIndex, tokenize } from './memory-index.js';
export type { MemoryServiceOptions } from './memory-service.js';
export { MemoryService, memoryEntry } from './memory-service.js';
export type { MemoryListing, MemoryStoreOptions } from './memory-store.js';
export {
  DEFAULT_MEMORY_MAX_BYTES,
  DEFAULT_MEMORY_MAX_ENTRIES,
  FULL_SCOPE_OLDEST,
  MemoryStore,
  preview,
} from './memory-store.js';
export type { ListOptions } from './records.js';
export { LIST_SCAN_MAX, METADATA_INDEX_VALUE_MAX } from './records.js';
export type { BreakerState, RedisBreakerOptions, RedisOutage, WatchedConnection } from './redis-breaker.js';
export { RedisBreaker } from './redis-breaker.js';
export { parsePublishedEvent } from './replies.js';
export type { RunServiceOptions, SessionLink } from './run-service.js';
export { createRunQueue, hashBody, RunService } from './run-service.js';
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
} from './run-store.js';
export { DEFAULT_SESSION_TTL_S, RunStore } from './run-store.js';
export type { SessionEvent, SessionFollowerOptions } from './session-follower.js';
export {
  asSessionEvent,
  parseSessionCursor,
  readSessionEvents,
  SessionFollower,
  sessionCursor,
} from './session-follower.js';
export type { SessionRecord, SessionServiceOptions } from './session-service.js';
export { SessionService } from './session-service.js';
export type { SkillIndex, SkillLimits, SkillSnapshot, SkillStoreOptions } from './skill-store.js';
export { SkillStore } from './skill-store.js';
export type { PipelineReply } from './slot-pipelines.js';
export { keySlot, SlotPipelines } from './slot-pipelines.js';
export type { SlotTaken, TenantSlotsOptions } from './tenant-slots.js';
export { TenantSlots } from './tenant-slots.js';
export { toolCallOutcome } from './waitpoint-store.js';
export type { WebhookDispatcherOptions } from './webhook-dispatcher.js';
export { answerTokenHash, newAnswerToken, WebhookDispatcher } from './webhook-dispatcher.js';
export type {
  AttemptOutcome,
  DeliveryRecord,
  EndpointRecord,
  PumpJobData,
  Sealer,
  Take,
  TakenDelivery,
  WebhookStoreOptions,
} from './webhook-store.js';
export {
  createWebhookQueue,
  DEFAULT_WEBHOOK_SETTINGS,
  deliveryView,
  pumpJobId,
  WAKE_LEASE_MS,
  WebhookStore,
  webhookView,
} from './webhook-store.js';
