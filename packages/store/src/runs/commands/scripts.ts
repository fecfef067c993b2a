import type { RunStatus } from '@tether/protocol';
import { scriptsIn } from '../../redis/lua-script.js';
import { lifecycleLua } from '../lifecycle.js';

/**
 * The runs' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  appendEvents: number | null;
  createRun: string | null;
  claimRun:
    | ['ok', string, string, string, string, number]
    | ['wait', string]
    | ['early', number]
    | ['expire', number]
    | ['missing' | 'cancel' | 'completed' | 'failed' | 'cancelled' | 'expired'];
  saveCheckpoint: number;
  openWaitpoint: 1 | 2 | 0 | -1 | -2;
  resolveRequest:
    | 'ok'
    | 'last'
    | 'no_run'
    | 'no_request'
    | 'bad_token'
    | 'token_used'
    | 'answered'
    | 'received'
    | 'reported'
    | 'decided'
    | 'timed_out'
    | 'expired'
    | 'ended';
  expireWaitpoint: ['ready', ...string[]] | ['pending', string] | ['missing'] | ['not_owner'];
  migrateWaitpoint: 'moved' | 'none';
  finalizeRun: [string, '' | 'ready' | 'unreported', string] | 0 | -1;
  retryRun: string | null;
  requestCancel: 'missing' | RunStatus;
  rescheduleRun: 'ok' | 'missing' | 'cancel' | RunStatus;
  dueRun: ['due'] | ['early', number] | ['expire', number] | ['cancel'] | ['missing'] | [RunStatus];
  setStatus: 1 | 0;
  steerRun: 'ok' | 'missing' | 'ended' | 'full';
}

const script = scriptsIn<Replies>(COMMANDS, { 'includes/lifecycle': lifecycleLua() });

/** appendEvents.lua: appends events unless the run has ended (or, with a token, is another's). */
export const appendEvents = script('appendEvents', {
  keys: ['record', 'events'],
  args: ['channel', 'maxlen', 'runId', 'token'],
  rest: 'events',
});

/** createRun.lua: the record, spec and metadata, and `run.queued` (and a session's run joins it, a crew child its parent's children). */
export const createRun = script('createRun', {
  keys: [
    'record',
    'events',
    'spec',
    'metadata',
    'turn',
    'sessionRecord',
    'sessionRuns',
    'sessionQueue',
    'parentChildren',
  ],
  args: [
    'channel',
    'maxlen',
    'runId',
    'spec',
    'metadata',
    'session',
    'multitask',
    'input',
    'runsChannel',
    'sessionTtl',
    'parent',
    'scheduled',
    'nextType',
    'nextData',
  ],
  rest: 'fields',
});

/** claimRun.lua: a worker takes the run for an attempt (a session's, when no other is ahead). */
export const claimRun = script('claimRun', {
  keys: ['record', 'events', 'spec', 'checkpoint', 'sessionQueue', 'parentRecord', 'inbox'],
  args: ['channel', 'maxlen', 'runId', 'token', 'attempt', 'workerId', 'parentId'],
});

/** saveCheckpoint.lua: the fenced save of the checkpoint (and a session run's turn) and the events since the last write. */
export const saveCheckpoint = script('saveCheckpoint', {
  keys: ['record', 'checkpoint', 'events', 'turn', 'inbox'],
  args: [
    'token',
    'checkpoint',
    'todos',
    'usage',
    'channel',
    'maxlen',
    'runId',
    'step',
    'profile',
    'model',
    'taken',
    'turnCount',
  ],
  rest: 'rest',
});

/** openWaitpoint.lua: the run waits on a new waitpoint (a question, client tool calls or its children). */
export const openWaitpoint = script('openWaitpoint', {
  keys: ['record', 'events', 'waitpoint', 'waitpointResults', 'children', 'rootEvents'],
  args: [
    'channel',
    'maxlen',
    'runId',
    'token',
    'id',
    'deadline',
    'maxChildren',
    'onTimeout',
    'rootChannel',
    'rootRunId',
    'count',
  ],
  rest: 'rest',
});

/** resolveRequest.lua: one request of the waitpoint resolved, the first time only. */
export const resolveRequest = script('resolveRequest', {
  keys: ['record', 'events', 'waitpoint', 'waitpointResults', 'rootEvents'],
  args: [
    'channel',
    'maxlen',
    'runId',
    'waitpointId',
    'requestId',
    'kind',
    'result',
    'eventType',
    'eventData',
    'tokenHash',
    'rootChannel',
    'rootRunId',
  ],
});

/** expireWaitpoint.lua: what a resuming worker learns of its waitpoint, timing it out past the deadline. */
export const expireWaitpoint = script('expireWaitpoint', {
  keys: ['record', 'events', 'waitpoint', 'waitpointResults', 'rootEvents'],
  args: ['channel', 'maxlen', 'runId', 'token', 'id', 'rootChannel', 'rootRunId'],
  rest: 'requestIds',
});

/** migrateWaitpoint.lua: a live run's wait of the release before the waitpoint, moved into its waitpoint. */
export const migrateWaitpoint = script('migrateWaitpoint', {
  keys: [
    'record',
    'waitpoint',
    'waitpointResults',
    'pending',
    'clarify',
    'toolCalls',
    'toolOutputs',
    'delegation',
  ],
  args: ['kind', 'question'],
});

/** finalizeRun.lua: ends the run once, with its terminal event. */
export const finalizeRun = script('finalizeRun', {
  keys: [
    'record',
    'events',
    'checkpoint',
    'spec',
    'waitpoint',
    'waitpointResults',
    'metadata',
    'turn',
    'sessionRecord',
    'sessionQueue',
    'transcript',
    'sessionRuns',
    'children',
    'parentRecord',
    'parentEvents',
    'parentWaitpoint',
    'parentResults',
    'files',
    'inbox',
    'batchRecord',
    'batchRuns',
  ],
  args: [
    'channel',
    'maxlen',
    'runId',
    'status',
    'eventType',
    'eventData',
    'retention',
    'token',
    'checkpoint',
    'sessionTtl',
    'parentId',
    'parentChannel',
    'childStatus',
    'childSummary',
    'childUsage',
    'turnCount',
    'fieldCount',
  ],
  rest: 'pairs',
});

/** retryRun.lua: a retryable failure, back to queued with `run.retrying`. */
export const retryRun = script('retryRun', {
  keys: ['record', 'events'],
  args: ['channel', 'maxlen', 'runId', 'attempt', 'delayMs', 'error', 'token'],
});

/** requestCancel.lua: flags the run for cancellation and tells every worker. */
export const requestCancel = script('requestCancel', {
  keys: ['record'],
  args: ['channel', 'runId', 'mode'],
});

/** rescheduleRun.lua: a scheduled run's new start time, with `run.scheduled`. */
export const rescheduleRun = script('rescheduleRun', {
  keys: ['record', 'events'],
  args: ['channel', 'maxlen', 'runId', 'runAt', 'data'],
});

/** dueRun.lua: a scheduled run whose time has come is queued (`run.queued`); an early one is left. */
export const dueRun = script('dueRun', {
  keys: ['record', 'events'],
  args: ['channel', 'maxlen', 'runId'],
});

/** setStatus.lua: a non-terminal status, while the caller owns the run. */
export const setStatus = script('setStatus', {
  keys: ['record'],
  args: ['token', 'status'],
});

/** steerRun.lua: a message for a live run, kept until it takes it at a turn boundary. */
export const steerRun = script('steerRun', {
  keys: ['record', 'events', 'inbox'],
  args: ['channel', 'maxlen', 'runId', 'message', 'pendingMax'],
});
