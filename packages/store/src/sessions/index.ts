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
