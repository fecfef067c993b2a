export type { Locale, ModelSpec } from '@tether/protocol';
export { isLocale, LOCALES } from '@tether/protocol';
export type { ClarifyRequestContext, ClarifyRequestHandler } from './attempt/ask-in-process.js';
export type {
  Checkpoint,
  InitialCheckpointOptions,
  PendingClarifyState,
  PendingDelegation,
  SharedPrompt,
} from './attempt/checkpoint.js';
export {
  initialCheckpoint,
  ownMessages,
  parseCheckpoint,
  readCheckpoint,
  restoreHistory,
  sharedPromptRef,
  storedCheckpoint,
  unansweredToolCalls,
} from './attempt/checkpoint.js';
export type { ArchiveToolResult, CompactionReport } from './attempt/compaction.js';
export {
  COMPACT_TARGET,
  CONTEXT_WINDOWS,
  compactTranscript,
  DEFAULT_COMPACT_AT,
  familyContextWindow,
  KEEP_RECENT_TURNS,
  RequestCounter,
  SUMMARY_PROMPT,
} from './attempt/compaction.js';
export type {
  ApprovalRequestHandler,
  AttemptLimits,
  AttemptOutcome,
  AttemptParams,
  ClarifyResolution,
  ContextOptions,
  CrewOptions,
  ToolCallResolution,
} from './attempt/run-attempt.js';
export {
  crewResultContent,
  DEFAULT_ATTEMPT_LIMITS,
  runAttempt,
  truncateMiddle,
  turnCost,
} from './attempt/run-attempt.js';
export type {
  ApprovalRequest,
  ChildrenRequest,
  CrewResultEntry,
  QuestionRequest,
  ToolOutputRequest,
  Waitpoint,
  WaitRequest,
  WaitRequestKind,
  WaitResolution,
} from './attempt/waitpoint.js';
export { approvalsOf, childrenOf, questionOf, toolOutputsOf } from './attempt/waitpoint.js';
export type { AgentErrorCode, AgentErrorOptions } from './errors.js';
export { AGENT_ERROR_CODES, AGENT_ERRORS, AgentError, isAgentError } from './errors.js';
export type { PromptPack } from './prompt/packs/prompt-pack.js';
export type {
  BehaviorTool,
  MemoryPromptBlock,
  SkillsIndex,
  SystemPromptOptions,
} from './prompt/system-prompt.js';
export {
  BEHAVIOR_TOOLS,
  buildSystemPrompt,
  clarifyFailedMessage,
  clarifyTimeoutMessage,
  composeSystemPrompt,
  crewSection,
  escalatedToolResult,
  getToolBehaviors,
  getToolUseEnforcement,
  memorySection,
  PROMPT_PACKS,
  skillsSection,
  TOOL_BEHAVIOR,
  TOOL_BEHAVIOR_BY_LOCALE,
  toolTimeoutMessage,
} from './prompt/system-prompt.js';
export type { AnthropicProviderOptions } from './providers/anthropic-provider.js';
export {
  ANTHROPIC_DEFAULT_MAX_OUTPUT_TOKENS,
  createAnthropicProvider,
} from './providers/anthropic-provider.js';
export { PROCESS_BREAKER, ProfileBreaker } from './providers/fallback-provider.js';
export type {
  EnvModelProfiles,
  ModelPrices,
  ModelProfile,
  ModelProfileInput,
  ModelProviderKind,
} from './providers/model-profiles.js';
export {
  DEFAULT_BASE_URLS,
  DEFAULT_MODELS,
  defaultModel,
  describeProfile,
  ENV_PROFILE_NAME,
  MODEL_PROVIDERS,
  MODEL_SETUP_HINT,
  ModelPricesSchema,
  ModelProfileSchema,
  parseModelProfiles,
  profilesFromEnv,
  readProfilesFromEnv,
} from './providers/model-profiles.js';
export type {
  ChatMessage,
  ModelFallbackEvent,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelRetryEvent,
  ModelTool,
  ProviderLogger,
} from './providers/model-provider.js';
export type { ModelChoice, ModelSpecOptions } from './providers/model-spec.js';
export { checkModelSpec, childModelSpec } from './providers/model-spec.js';
export type { MaxTokensField, OpenAIProviderOptions } from './providers/openai-provider.js';
export { createOpenAIProvider } from './providers/openai-provider.js';
export type { ReplayProviderOptions } from './providers/replay-provider.js';
export { createReplayProvider, parseReplayScript } from './providers/replay-provider.js';
export type { ResolveProviderOptions } from './providers/resolve-provider.js';
export { resolveProvider } from './providers/resolve-provider.js';
export type { HistoryTruncation, HistoryWindow } from './session/history.js';
export { DEFAULT_SESSION_HISTORY_TOKENS, historyMessages } from './session/history.js';
export { countTokens } from './session/tokens.js';
export type { TranscriptEntry, TurnEntriesOptions } from './session/transcript.js';
export {
  CANCELLED_TOOL_RESULT,
  INTERRUPTED_TOOL_RESULT,
  SHORTENED_TOOL_RESULT_CHARS,
  turnEntries,
} from './session/transcript.js';
