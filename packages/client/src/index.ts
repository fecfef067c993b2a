export type {
  ApprovalDecisionBody,
  ApprovalPolicy,
  CancelRunResponse,
  ChildResultStatus,
  ChildRun,
  ClearMemoryResponse,
  ClientTool,
  CreateMemoryBody,
  CreateRunBody,
  CreateRunResponse,
  CreateScheduleBody,
  CreateSessionBody,
  CreateSessionResponse,
  CreateSessionRunBody,
  CreateSessionRunResponse,
  CreateWebhookBody,
  EventPage,
  MemoryEntry,
  MemoryPage,
  MessagePage,
  ModelCatalog,
  ModelProfileInfo,
  Multitask,
  OutputSpec,
  PendingApproval,
  PendingClarify,
  PendingToolCall,
  PutSkillBody,
  ReplayTurn,
  Run,
  RunEvent,
  RunFile,
  RunFileList,
  RunList,
  RunStatus,
  Schedule,
  ScheduleList,
  ScheduleRunPage,
  ScheduleTriggerResponse,
  Session,
  SessionDefaults,
  SessionList,
  SessionStatus,
  Skill,
  SkillList,
  SkillSummary,
  SteerMessageBody,
  SteerMessageResponse,
  TenantBudgetsView,
  ToolCatalog,
  ToolInfo,
  TranscriptEntryView,
  UpdateScheduleBody,
  UpdateWebhookBody,
  UsageReport,
  UsageRow,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookList,
  WebhookPayload,
  WebhookWithSecret,
} from '@tether/protocol';
/** Reads `Retry-After` (seconds or an HTTP date) into milliseconds; the SDK's own retries use it. */
export { parseRetryAfter, TetherError } from '@tether/protocol';
export type {
  EventsPageOptions,
  ListOptions,
  RetryOptions,
  RunEventPage,
  TetherClientOptions,
  WaitOptions,
} from './client.js';
export { TetherClient } from './client.js';
export type { ClientErrorCode, TetherApiErrorOptions } from './errors.js';
export {
  CLIENT_ERROR_CODES,
  TetherApiError,
  TetherConflictError,
  TetherConnectionError,
  TetherNotFoundError,
  TetherProtocolError,
  TetherRateLimitError,
  TetherTimeoutError,
  TetherUnauthorizedError,
} from './errors.js';
export type { McpServerTransport } from './mcp-servers.js';
export { TetherMcpServers } from './mcp-servers.js';
export type { MemoryListOptions, MemoryTransport } from './memory.js';
export { TetherMemory } from './memory.js';
export type { RequestOptions, SubmitOptions } from './request.js';
export type {
  ApprovalHandler,
  ApprovalRequest,
  ResultOf,
  ResultType,
  RunBodyWithOutput,
  RunToCompletionOptions,
  RunWithResult,
  ToolCallHandler,
  ToolCallRequest,
} from './run-to-completion.js';
export type { ScheduleTransport } from './schedules.js';
export { TetherSchedules } from './schedules.js';
export type {
  MessagesOptions,
  SessionDeleteOptions,
  SessionEvent,
  SessionEventsOptions,
  SessionListOptions,
} from './sessions.js';
export { TetherSessions } from './sessions.js';
export type { SkillTransport } from './skills.js';
export { TetherSkills } from './skills.js';
export type { SseMessage, SseParserOptions } from './sse-parser.js';
export { SseParser } from './sse-parser.js';
export type { EventFeed, RunEventSource, StreamOptions, StreamReconnectOptions } from './stream.js';
export { compareEventIds, followEvents, followRunEvents } from './stream.js';
export type { RunTree, RunTreeUnread, TreeOptions } from './tree.js';
export type { WebhookTransport } from './webhooks.js';
export { TetherWebhooks } from './webhooks.js';
