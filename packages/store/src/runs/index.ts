export { cancelBatch, readBatch } from './batches.js';
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
  RunDeliveries,
  RunEnd,
  RunEngineOptions,
  RunJobs,
  WaitOpen,
  WaitRefusal,
} from './engine.js';
export { CHILDREN_GRACE_MS, RunEngine } from './engine.js';
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
export type { ListOptions } from './records.js';
export { indexedMetadata, LIST_SCAN_MAX, METADATA_INDEX_VALUE_MAX } from './records.js';
export { parsePublishedEvent } from './replies.js';
export type { RunServiceOptions, SessionLink } from './run-service.js';
export { createRunQueue, hashBody, RunService } from './run-service.js';
export type {
  AnswerResult,
  ChildLink,
  ClaimResult,
  CrewSpec,
  DecisionResult,
  Delegation,
  DueResult,
  EndedRun,
  NewDelegation,
  NewRun,
  NewWaitpoint,
  RequestKind,
  RequestOutcome,
  RescheduleResult,
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
export { SHARED_PROMPT_REFRESH_MS, SHARED_PROMPT_TTL_S, SharedPrompts } from './shared-prompts.js';
export { decisionOf, toolCallOutcome } from './waitpoint-store.js';
