import type { RunStatus } from '@tether/protocol';
import { lifecycleLua } from './lifecycle.js';
import { LuaScript, loadLua, type ScriptSignature } from './lua-script.js';

/**
 * The run's Lua scripts, one file each in `commands/`: every change that must
 * happen together (a status and its event, an answer and its event) is one of
 * them, on the run's own keys. Each file's header lists its KEYS, ARGV and
 * Output; each wrapper here names the same keys and arguments in the same order
 * (checked when the file is loaded, so a wrapper that disagrees with its header
 * fails at import) and types the Output. Keys are named as in `RunKeys`
 * (keys.ts), so a caller can pass a run's keys as they are.
 */
const COMMANDS = new URL('./commands/', import.meta.url);
/** Includes generated from TypeScript rather than read from a file. */
const GENERATED = { 'includes/lifecycle': lifecycleLua() };

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  appendEvents: number | null;
  createRun: string | null;
  claimRun:
    | ['ok', string, string, string, string]
    | ['wait', string]
    | ['missing' | 'cancel' | 'completed' | 'failed' | 'cancelled'];
  saveCheckpoint: 1 | 0 | -1;
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
    | 'timed_out'
    | 'expired'
    | 'ended';
  expireWaitpoint: ['ready', ...string[]] | ['pending', string] | ['missing'] | ['not_owner'];
  migrateWaitpoint: 'moved' | 'none';
  finalizeRun: [string, '' | 'ready' | 'unreported', string] | 0 | -1;
  retryRun: string | null;
  requestCancel: 'missing' | RunStatus;
  setStatus: 1 | 0;
  deleteSession: 'ok' | 'missing' | 'busy' | 'changed';
  acquireTenantSlot: [1] | [0, number];
  releaseTenantSlot: string[];
  renewTenantSlots: string[];
  forgetTenantSlot: 1 | 0;
  memorySave:
    | ['saved', string, string, string, number]
    | ['duplicate' | 'missing', string]
    | ['full', 'entries' | 'bytes', ...string[]];
  memoryDelete: 1 | 0;
  memoryClear: number;
  memoryChanges: [number] | [number, 'changes' | 'all' | 'reset', ...string[]];
  saveSkill:
    | ['ok', string, 0 | 1]
    | ['exists' | 'missing' | 'pinned']
    | ['changed', number]
    | ['count' | 'bytes' | 'files', number, number]
    | ['no_file', string]
    | ['clash', string, string];
  deleteSkill: 'ok' | 'missing' | 'pinned';
  readSkill: [string, string, ...(string | number)[]] | null;
  saveMcpServer: ['created' | 'replaced', string] | ['full', number];
  webhookCollect: [string, string, string, string, string, 0 | 1, ...string[]] | null;
  webhookDispatch: [number, ...string[]];
  webhookTake: [string, string, string, string, ...string[]] | null;
  webhookSettle: [string, 0 | 1];
  webhookSleep: ['busy'] | ['asleep', string] | null;
  webhookCreate: number;
  webhookUpdate: 1 | 0;
  webhookDelete: 1 | 0;
  webhookEndpoints: (string | string[])[];
  webhookDeliveries: [0 | 1, ...(string | string[])[]];
  webhookRedeliver: 'wake' | 'ok' | 'missing' | 'disabled';
  webhookUnmark: 1 | 0;
  holdLease: 1 | 0;
  releaseLease: 1 | 0;
}

function script<N extends keyof Replies, K extends string, A extends string, R extends string = never>(
  name: N,
  signature: ScriptSignature<K, A, R>,
): LuaScript<K, A, R, Replies[N]> {
  return new LuaScript(name, loadLua(COMMANDS, name, signature, GENERATED), signature);
}

/** commands/appendEvents.lua: appends events unless the run has ended (or, with a token, is another's). */
export const appendEvents = script('appendEvents', {
  keys: ['record', 'events'],
  args: ['channel', 'maxlen', 'runId', 'token'],
  rest: 'events',
});

/** commands/createRun.lua: the record, spec and metadata, and `run.queued` (and a session's run joins it, a crew child its parent's children). */
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
  ],
  rest: 'fields',
});

/** commands/claimRun.lua: a worker takes the run for an attempt (a session's, when no other is ahead). */
export const claimRun = script('claimRun', {
  keys: ['record', 'events', 'spec', 'checkpoint', 'sessionQueue', 'parentRecord'],
  args: ['channel', 'maxlen', 'runId', 'token', 'attempt', 'workerId', 'parentId'],
});

/** commands/saveCheckpoint.lua: the fenced save of the checkpoint (and a session run's turn) and the events since the last write. */
export const saveCheckpoint = script('saveCheckpoint', {
  keys: ['record', 'checkpoint', 'events', 'turn'],
  args: ['token', 'checkpoint', 'todos', 'usage', 'channel', 'maxlen', 'runId', 'step', 'turnCount'],
  rest: 'rest',
});

/** commands/openWaitpoint.lua: the run waits on a new waitpoint (a question, client tool calls or its children). */
export const openWaitpoint = script('openWaitpoint', {
  keys: ['record', 'events', 'waitpoint', 'waitpointResults', 'children'],
  args: ['channel', 'maxlen', 'runId', 'token', 'id', 'deadline', 'maxChildren', 'count'],
  rest: 'rest',
});

/** commands/resolveRequest.lua: one request of the waitpoint resolved, the first time only. */
export const resolveRequest = script('resolveRequest', {
  keys: ['record', 'events', 'waitpoint', 'waitpointResults'],
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
  ],
});

/** commands/expireWaitpoint.lua: what a resuming worker learns of its waitpoint, timing it out past the deadline. */
export const expireWaitpoint = script('expireWaitpoint', {
  keys: ['record', 'events', 'waitpoint', 'waitpointResults'],
  args: ['channel', 'maxlen', 'runId', 'token', 'id'],
  rest: 'requestIds',
});

/** commands/migrateWaitpoint.lua: a live run's wait of the release before the waitpoint, moved into its waitpoint. */
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

/** commands/finalizeRun.lua: ends the run once, with its terminal event. */
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

/** commands/retryRun.lua: a retryable failure, back to queued with `run.retrying`. */
export const retryRun = script('retryRun', {
  keys: ['record', 'events'],
  args: ['channel', 'maxlen', 'runId', 'attempt', 'delayMs', 'error', 'token'],
});

/** commands/requestCancel.lua: flags the run for cancellation and tells every worker. */
export const requestCancel = script('requestCancel', {
  keys: ['record'],
  args: ['channel', 'runId', 'mode'],
});

/** commands/setStatus.lua: a non-terminal status, while the caller owns the run. */
export const setStatus = script('setStatus', {
  keys: ['record'],
  args: ['token', 'status'],
});

/** commands/deleteSession.lua: a session's own keys, once it has no live run. */
export const deleteSession = script('deleteSession', {
  keys: ['sessionRecord', 'sessionRuns', 'sessionQueue', 'transcript', 'files'],
  args: ['sessionId', 'runCount'],
});

/** commands/acquireTenantSlot.lua: one of a tenant's slots for a run about to be claimed, or its place in the line. */
export const acquireTenantSlot = script('acquireTenantSlot', {
  keys: ['running', 'holders', 'parked'],
  args: ['runId', 'holder', 'cap', 'leaseMs', 'ttlMs'],
});

/** commands/releaseTenantSlot.lua: a tenant's slot back at an attempt's end, and free slots handed to the runs waiting longest. */
export const releaseTenantSlot = script('releaseTenantSlot', {
  keys: ['running', 'holders', 'parked'],
  args: ['runId', 'holder', 'cap', 'reserveMs', 'ttlMs'],
});

/** commands/forgetTenantSlot.lua: a run that ended without an attempt leaves the line, and gives back a slot handed to it. */
export const forgetTenantSlot = script('forgetTenantSlot', {
  keys: ['running', 'holders', 'parked'],
  args: ['runId'],
});

/** commands/renewTenantSlots.lua: the leases of a worker's slots of one tenant, while their attempts hold them. */
export const renewTenantSlots = script('renewTenantSlots', {
  keys: ['running', 'holders'],
  args: ['leaseMs', 'ttlMs'],
  rest: 'held',
});

/** commands/memorySave.lua: a memory entry saved or replaced, unless a duplicate, gone or past the scope's limits. */
export const memorySave = script('memorySave', {
  keys: ['entries', 'order', 'digests', 'meta', 'log'],
  args: ['id', 'replaces', 'content', 'body', 'maxEntries', 'maxBytes', 'oldest'],
});

/** commands/memoryDelete.lua: one memory entry deleted. */
export const memoryDelete = script('memoryDelete', {
  keys: ['entries', 'order', 'digests', 'meta', 'log'],
  args: ['id'],
});

/** commands/memoryClear.lua: every entry of a memory scope deleted (its version goes on counting). */
export const memoryClear = script('memoryClear', {
  keys: ['entries', 'order', 'digests', 'meta', 'log'],
  args: [],
});

/** commands/memoryChanges.lua: what a reader's copy of a memory scope lacks since its version. */
export const memoryChanges = script('memoryChanges', {
  keys: ['entries', 'meta', 'log'],
  args: ['since'],
});

/** commands/saveSkill.lua: a tenant's skill created, replaced or changed, within the tenant's limits. */
export const saveSkill = script('saveSkill', {
  keys: ['index', 'files', 'totals'],
  args: [
    'name',
    'mode',
    'description',
    'byAgent',
    'pinned',
    'ifVersion',
    'maxCount',
    'maxBytes',
    'maxFiles',
    'setCount',
  ],
  rest: 'rest',
});

/** commands/deleteSkill.lua: a tenant's skill deleted (not a pinned one, for the agent). */
export const deleteSkill = script('deleteSkill', {
  keys: ['index', 'files', 'totals'],
  args: ['name', 'byAgent'],
});

/** commands/readSkill.lua: a skill's summary, SKILL.md, and its files' paths and sizes. */
export const readSkill = script('readSkill', {
  keys: ['index', 'files'],
  args: ['name'],
});

/** commands/saveMcpServer.lua: a tenant's MCP server registered or replaced, within the tenant's limit. */
export const saveMcpServer = script('saveMcpServer', {
  keys: ['servers'],
  args: ['name', 'server', 'max'],
});
/** commands/webhookCollect.lua: what a run's webhook deliveries need, and its events after the hint. */
export const webhookCollect = script('webhookCollect', {
  keys: ['record', 'events', 'metadata', 'webhookHint', 'waitpoint'],
  args: ['types', 'after', 'scan', 'tokenHash'],
});

/** commands/webhookDispatch.lua: a run's deliveries, once per event and endpoint, in its chains. */
export const webhookDispatch = script('webhookDispatch', {
  keys: ['endpoints', 'cursor'],
  args: [
    'runId',
    'endpointPrefix',
    'duePrefix',
    'logPrefix',
    'deliveryPrefix',
    'chainPrefix',
    'cursorTtl',
    'deliveryTtl',
    'logMax',
    'logAgeMs',
    'wakeMs',
  ],
  rest: 'events',
});

/** commands/webhookTake.lua: an endpoint's pump takes the deliveries due now. */
export const webhookTake = script('webhookTake', {
  keys: ['endpoint', 'due', 'inflight'],
  args: ['max', 'deliveryPrefix', 'leaseMs', 'recover'],
});

/** commands/webhookSettle.lua: the end of an attempt of a delivery (or of the delivery). */
export const webhookSettle = script('webhookSettle', {
  keys: ['endpoint', 'due', 'inflight', 'delivery', 'chain'],
  args: ['deliveryId', 'outcome', 'httpStatus', 'error', 'nextAt', 'retention', 'disableAfterMs', 'reason'],
});

/** commands/webhookSleep.lua: whether an endpoint's pump may sleep, and until when. */
export const webhookSleep = script('webhookSleep', { keys: ['endpoint', 'due'], args: [] });

/** commands/webhookCreate.lua: a tenant's new endpoint, within its limit. */
export const webhookCreate = script('webhookCreate', {
  keys: ['endpoints', 'endpoint'],
  args: ['id', 'max'],
  rest: 'fields',
});

/** commands/webhookUpdate.lua: changes an endpoint that exists. */
export const webhookUpdate = script('webhookUpdate', {
  keys: ['endpoint'],
  args: ['setCount'],
  rest: 'fields',
});

/** commands/webhookDelete.lua: removes an endpoint. */
export const webhookDelete = script('webhookDelete', {
  keys: ['endpoints', 'endpoint', 'due', 'inflight', 'log'],
  args: ['id'],
});

/** commands/webhookEndpoints.lua: a tenant's endpoints. */
export const webhookEndpoints = script('webhookEndpoints', {
  keys: ['endpoints'],
  args: ['endpointPrefix'],
});

/** commands/webhookDeliveries.lua: a page of an endpoint's delivery log. */
export const webhookDeliveries = script('webhookDeliveries', {
  keys: ['log'],
  args: ['deliveryPrefix', 'afterId', 'afterScore', 'limit'],
});

/** commands/webhookRedeliver.lua: a delivery sent again. */
export const webhookRedeliver = script('webhookRedeliver', {
  keys: ['endpoint', 'due', 'log', 'original', 'delivery', 'chain'],
  args: ['id', 'originalId', 'deliveryTtl', 'wakeMs'],
});

/** commands/webhookUnmark.lua: a run off the dirty set, unless marked again. */
export const webhookUnmark = script('webhookUnmark', { keys: ['dirty'], args: ['runId', 'score'] });

/** commands/holdLease.lua: a lease taken when free (SET NX PX), or renewed by its holder. */
export const holdLease = script('holdLease', {
  keys: ['lease'],
  args: ['holder', 'ttlMs'],
});

/** commands/releaseLease.lua: a lease given up by its holder. */
export const releaseLease = script('releaseLease', {
  keys: ['lease'],
  args: ['holder'],
});
