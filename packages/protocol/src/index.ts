export type { TetherErrorOptions } from './errors.js';
export { TetherError, toErrorBody } from './errors.js';
export type {
  EmitEvent,
  ErrorBody,
  RunEvent,
  RunEventData,
  RunEventInput,
  RunEventType,
  RunStatus,
  TodoItem,
  TodoStatus,
  ToolCall,
  Usage,
} from './events.js';
export {
  ErrorBodySchema,
  EventDataSchemas,
  RUN_EVENT_TYPES,
  RUN_STATUSES,
  RunEventSchema,
  RunStatusSchema,
  TERMINAL_EVENT_TYPES,
  TERMINAL_STATUSES,
  TODO_STATUSES,
  TodoItemSchema,
  ToolCallSchema,
  UsageSchema,
} from './events.js';
