import { createHash } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';

/**
 * A Lua script run by its SHA, loaded on first use (and again after a Redis
 * restart or failover flushes the script cache).
 */
export class LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;

  constructor(name: string, source: string) {
    this.name = name;
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (isNoScript(error)) return redis.eval(this.source, keys.length, ...keys, ...args);
      throw error;
    }
  }

  /** Adds the script to a pipeline by its SHA; on a NOSCRIPT reply the caller runs it again with `run`. */
  queue(pipeline: ChainableCommander, keys: string[], args: (string | number)[]): void {
    pipeline.evalsha(this.sha, keys.length, ...keys, ...args);
  }
}

/** Whether Redis answered that it does not know the script (a restart or failover emptied its cache). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.includes('NOSCRIPT');
}

/**
 * Appends one event to a run's stream (capped) and publishes it, in the same
 * script as whatever else the caller changes: ids only increase, and a reader
 * that subscribes before it reads the backlog misses nothing. An event's time
 * is its stream id's (milliseconds), so it is not stored twice.
 */
const APPEND = `
local function append(stream, channel, maxlen, runId, etype, data)
  local id = redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 't', etype, 'd', data)
  redis.call('PUBLISH', channel, '{"id":"' .. id .. '","runId":"' .. runId .. '","type":"' .. etype .. '","data":' .. data .. '}')
  return id
end
-- Appends the events given in ARGV as (type, data) pairs from index \`from\`, \`count\` of them (all when nil).
local function appendPairs(stream, channel, maxlen, runId, from, count)
  local last = #ARGV
  if count then last = from + 2 * count - 1 end
  for i = from, last, 2 do append(stream, channel, maxlen, runId, ARGV[i], ARGV[i + 1]) end
end
-- Redis preallocates 4 KB for a stream's newest node: a short log is rewritten at its real size.
local function compact(stream)
  if redis.call('XLEN', stream) <= 100 then
    redis.call('RESTORE', stream, 0, redis.call('DUMP', stream), 'REPLACE')
  end
end
local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * KEYS: record, events. ARGV: channel, maxlen, runId, token, then (type, data) pairs.
 * Appends the events, in order, unless the run has ended or (with a token)
 * another worker owns it. Returns how many, or false.
 */
export const appendEvents = new LuaScript(
  'appendEvents',
  `${APPEND}
local status = redis.call('HGET', KEYS[1], 'status')
if not status or terminal(status) then return false end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[4] then return false end
appendPairs(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 5)
return (#ARGV - 4) / 2`,
);

/**
 * KEYS: record, events, spec, metadata. ARGV: channel, maxlen, runId, spec JSON,
 * metadata JSON ('' for none), then field/value pairs.
 * Creates the run and appends `run.queued`. Returns the event id, or false when the run exists.
 */
export const createRun = new LuaScript(
  'createRun',
  `${APPEND}
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('SET', KEYS[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[4], ARGV[5]) end
return append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.queued', '{}')`,
);

/**
 * KEYS: record, events, spec, checkpoint. ARGV: channel, maxlen, runId, at, token, attempt, workerId.
 * A worker takes the run for an attempt: becomes its owner (the fencing token
 * every later write checks), marks it running, and appends `run.started` the
 * first time, then `attempt.started` (resumed when a checkpoint exists, at the
 * step the last save recorded). Returns { 'ok', spec, checkpoint } (what the
 * attempt needs, '' where absent), or { 'missing' }, { 'cancel' } (a cancel was requested), or
 * { terminal status }.
 */
export const claimRun = new LuaScript(
  'claimRun',
  `${APPEND}
local fields = redis.call('HMGET', KEYS[1], 'status', 'cancelRequested', 'attempts', 'startedAt', 'step')
local status = fields[1]
if not status then return { 'missing' } end
if terminal(status) then return { status } end
if fields[2] == '1' then return { 'cancel' } end
local attempts = math.max(tonumber(fields[3] or '0'), tonumber(ARGV[6]))
if fields[4] then
  redis.call('HSET', KEYS[1], 'owner', ARGV[5], 'status', 'running', 'attempts', attempts)
else
  redis.call('HSET', KEYS[1], 'owner', ARGV[5], 'status', 'running', 'attempts', attempts, 'startedAt', ARGV[4])
  append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.started', '{"attempt":' .. ARGV[6] .. ',"workerId":' .. cjson.encode(ARGV[7]) .. '}')
end
-- The attempt starts here: a run with a checkpoint resumes at the step the last save recorded.
local checkpoint = redis.call('GET', KEYS[4])
local step = fields[5] or '0'
append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'attempt.started', '{"attempt":' .. ARGV[6] .. ',"resumed":' .. (checkpoint and 'true' or 'false') .. ',"step":' .. (checkpoint and step or '0') .. '}')
return { 'ok', redis.call('GET', KEYS[3]) or '', checkpoint or '' }`,
);

/**
 * KEYS: record, checkpoint, events. ARGV: token, checkpoint JSON, todos JSON,
 * usage JSON, channel, maxlen, runId, step, then (type, data) pairs of events.
 * Appends the events emitted since the last write and saves the checkpoint,
 * only while the caller still owns the run and no cancel was requested.
 * Returns 1, 0 (another worker owns it) or -1 (cancel requested or ended).
 */
export const saveCheckpoint = new LuaScript(
  'saveCheckpoint',
  `${APPEND}
local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested')
if fields[1] ~= ARGV[1] then return 0 end
if not fields[2] or terminal(fields[2]) or fields[3] == '1' then return -1 end
appendPairs(KEYS[3], ARGV[5], ARGV[6], ARGV[7], 9)
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'todos', ARGV[3], 'usage', ARGV[4], 'step', ARGV[8])
return 1`,
);

/**
 * KEYS: record, clarify request, events, pending. ARGV: channel, maxlen, runId, at,
 * token, requestId, event data JSON, expiresAt (ms), pending JSON, clarify TTL (s),
 * then (type, data) pairs of events emitted before it.
 * Records the question and appends the events, then `clarify.requested`. Returns the event id,
 * 0 (not the owner) or -1 (cancel requested or ended).
 */
export const suspendRun = new LuaScript(
  'suspendRun',
  `${APPEND}
local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested')
if fields[1] ~= ARGV[5] then return 0 end
if not fields[2] or terminal(fields[2]) or fields[3] == '1' then return -1 end
redis.call('HSET', KEYS[2], 'requestId', ARGV[6], 'status', 'pending', 'expiresAt', ARGV[8])
redis.call('EXPIRE', KEYS[2], ARGV[10])
redis.call('HSET', KEYS[1], 'status', 'waiting_for_input')
redis.call('SET', KEYS[4], ARGV[9])
appendPairs(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 11)
local id = append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.requested', ARGV[7])
compact(KEYS[3])
return id`,
);

/**
 * KEYS: record, clarify request, events, pending. ARGV: channel, maxlen, runId, at, requestId, answer.
 * The first answer wins: 'ok', or why not: 'no_run', 'no_request', 'answered',
 * 'timed_out', 'expired' (past the deadline), 'ended' (the run has ended).
 */
export const answerClarify = new LuaScript(
  'answerClarify',
  `${APPEND}
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'no_run' end
local request = redis.call('HMGET', KEYS[2], 'status', 'expiresAt')
if not request[1] then return 'no_request' end
if request[1] ~= 'pending' then return request[1] end
if terminal(status) then return 'ended' end
if nowMs() >= tonumber(request[2]) then return 'expired' end
redis.call('HSET', KEYS[2], 'status', 'answered', 'answer', ARGV[6])
redis.call('DEL', KEYS[4])
redis.call('HSET', KEYS[1], 'status', 'queued')
append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.answered', cjson.encode({ requestId = ARGV[5], answer = ARGV[6] }))
return 'ok'`,
);

/**
 * KEYS: record, clarify request, events, pending. ARGV: channel, maxlen, runId, at, requestId, token.
 * What a resuming worker learns of its question: { 'answered', answer },
 * { 'timed_out' } (marking it so once the deadline has passed, and appending
 * `clarify.timed_out`), { 'pending', expiresAt }, or { 'missing' }.
 */
export const resolveClarify = new LuaScript(
  'resolveClarify',
  `${APPEND}
local request = redis.call('HMGET', KEYS[2], 'status', 'expiresAt', 'answer')
if not request[1] then return { 'missing' } end
if request[1] == 'answered' then return { 'answered', request[3] } end
if request[1] == 'timed_out' then return { 'timed_out' } end
if nowMs() < tonumber(request[2]) then return { 'pending', request[2] } end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[6] then return { 'not_owner' } end
redis.call('HSET', KEYS[2], 'status', 'timed_out')
redis.call('DEL', KEYS[4])
append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.timed_out', cjson.encode({ requestId = ARGV[5] }))
return { 'timed_out' }`,
);

/**
 * KEYS: record, events, checkpoint, spec, pending, metadata. ARGV: channel, maxlen, runId, at, status,
 * event type, event data, retention (s), token ('' for any), checkpoint JSON ('' to keep the stored
 * one), n, then n field/value pairs, then (type, data) pairs of events emitted before the end.
 * Ends the run once: sets the terminal status and fields (and the final checkpoint), appends the
 * terminal event (the last one), and lets the run's keys expire after the retention.
 * Returns the event id, 0 (already ended) or -1 (not the owner).
 */
export const finalizeRun = new LuaScript(
  'finalizeRun',
  `${APPEND}
local fields = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not fields[1] or terminal(fields[1]) then return 0 end
if ARGV[9] ~= '' and fields[2] ~= ARGV[9] then return -1 end
local fieldsEnd = 11 + 2 * tonumber(ARGV[11])
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'finishedAt', ARGV[4], unpack(ARGV, 12, fieldsEnd))
redis.call('HDEL', KEYS[1], 'owner')
if ARGV[10] ~= '' then redis.call('SET', KEYS[3], ARGV[10]) end
redis.call('DEL', KEYS[4], KEYS[5])
appendPairs(KEYS[2], ARGV[1], ARGV[2], ARGV[3], fieldsEnd + 1)
local id = append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[6], ARGV[7])
compact(KEYS[2])
for _, key in ipairs({ KEYS[1], KEYS[2], KEYS[3], KEYS[6] }) do redis.call('EXPIRE', key, ARGV[8]) end
return id`,
);

/**
 * KEYS: record, events. ARGV: channel, maxlen, runId, at, attempt, delay (ms), error JSON, token.
 * A retryable failure: back to queued, with `run.retrying`. Returns the event id or false.
 */
export const retryRun = new LuaScript(
  'retryRun',
  `${APPEND}
local fields = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not fields[1] or terminal(fields[1]) or fields[2] ~= ARGV[8] then return false end
redis.call('HSET', KEYS[1], 'status', 'queued')
return append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.retrying', '{"attempt":' .. ARGV[5] .. ',"delayMs":' .. ARGV[6] .. ',"error":' .. ARGV[7] .. '}')`,
);

/**
 * KEYS: record. ARGV: cancel channel, runId.
 * Flags the run for cancellation and tells every worker. Returns the status
 * before the request, 'missing', or the terminal status (nothing done).
 */
export const requestCancel = new LuaScript(
  'requestCancel',
  `${APPEND}
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if terminal(status) then return status end
redis.call('HSET', KEYS[1], 'cancelRequested', '1')
redis.call('PUBLISH', ARGV[1], ARGV[2])
return status`,
);

/**
 * KEYS: record. ARGV: token, status.
 * Sets a non-terminal status while the caller owns the run (a run woken before
 * its answer goes back to waiting). Returns 1, or 0.
 */
export const setStatus = new LuaScript(
  'setStatus',
  `${APPEND}
local fields = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not fields[1] or terminal(fields[1]) or fields[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2])
return 1`,
);
