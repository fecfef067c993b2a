--[[
  Ends the run once: sets the terminal status and fields (and the final checkpoint), drops the
  requests of the waitpoint it waits on, drops the spec and the submitted files of a completed run
  (a failed or cancelled run's stay for the retention: a retry starts from them), appends the
  events emitted before the end, `message.undelivered` for each message the run never took (its
  inbox goes), and then the terminal event (the last one), and lets the run's keys expire after the retention. A session's run moves
  its turn into the session's transcript and leaves the session's queue in the same step. A crew
  child records its result in its parent's waitpoint in the same step (and `child.finished` in the
  parent's log); the run's own waitpoint keeps only its requests' states. A batch's run counts
  itself in its batch (same hash slot), and the last one appends `batch.completed` just before its
  own terminal event (which stays the log's last).

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] checkpoint      the agent checkpoint (string)
    KEYS[4] spec            the submitted body (string)
    KEYS[5] waitpoint       the waitpoint the run waits on (hash)
    KEYS[6] waitpointResults  its requests' results (hash)
    KEYS[7] metadata        the caller's metadata (string)
    KEYS[8] turn            a session run's turn so far (list)
    KEYS[9] sessionRecord   the run's session (hash)
    KEYS[10] sessionQueue   the session's live runs (list)
    KEYS[11] transcript     the session's transcript (list)
    KEYS[12] sessionRuns    the session's runs (list)
    KEYS[13] children       the run's crew children (list)
    KEYS[14] parentRecord   a crew child's parent's record (hash)
    KEYS[15] parentEvents   the parent's event log (stream)
    KEYS[16] parentWaitpoint  the parent's waitpoint (hash)
    KEYS[17] parentResults  its requests' results (hash)
    KEYS[18] files          the submitted files, once written (string)
    KEYS[19] inbox          the messages the run has not taken (list)
    KEYS[20] batchRecord    the run's batch (hash)
    KEYS[21] batchRuns      the batch's run ids (list)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] status          'completed', 'failed', 'cancelled' or 'expired' (only a run that never
                            started, whose `expiresAt` has passed by Redis's clock)
    ARGV[5] eventType       the terminal event's type
    ARGV[6] eventData       the terminal event's data (JSON)
    ARGV[7] retention       how long the run's keys stay (s)
    ARGV[8] token           the caller's fencing token, '' for any owner
    ARGV[9] checkpoint      the final checkpoint (JSON), '' to keep the stored one
    ARGV[10] sessionTtl     how long a session's keys stay after this (s)
    ARGV[11] parentId       the crew parent the caller knows of, '' for none
    ARGV[12] parentChannel  the parent's events channel
    ARGV[13] childStatus    how a crew child ended, as its parent learns it
    ARGV[14] childSummary   a crew child's summary (its output, error or reason, capped)
    ARGV[15] childUsage     a crew child's usage (JSON)
    ARGV[16] turnCount      how many transcript entries of a session run's whole turn are given
                            (0: the stored turn stands)
    ARGV[17] fieldCount     how many field/value pairs follow
    ARGV[18...] pairs       fieldCount field/value pairs of the record, then turnCount transcript
                            entries (JSON each), then (type, data JSON) pairs of events

  Output:
    { id of the terminal event, parent, tenant } where parent is '' (no crew parent, or nothing
    more for it), 'ready' (the run was its parent's last child to report: the parent may resume) or
    'unreported' (the run's parent is not the one the caller named: report it separately), and
    tenant the run's (for the caller's metrics); 0 (the run is missing or has already ended) or -1
    (another worker owns it)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"
--- @include "includes/appendPairs"
--- @include "includes/compact"
--- @include "includes/replaceTurn"
--- @include "includes/endTurn"
--- @include "includes/resolveRequest"
--- @include "includes/dropRequests"

local fields = redis.call('HMGET', KEYS[1], 'status', 'owner', 'session', 'parent', 'call', 'index', 'createdAt',
  'tenant', 'expiresAt', 'startedAt', 'batch')
-- The step by the status it ends the run with.
local STEP = { completed = 'complete', failed = 'fail', cancelled = 'cancel', expired = 'expire' }
if not allowed(STEP[ARGV[4]] or ARGV[4], fields[1]) then return 0 end
if ARGV[8] ~= '' and fields[2] ~= ARGV[8] then return -1 end
local fieldsEnd = 17 + 2 * tonumber(ARGV[17])
local turnCount = tonumber(ARGV[16])
local now = nowMs()
-- Expired: a run that never started, past its deadline by this clock (the claim's), and no other.
if ARGV[4] == 'expired' and (fields[10] or not fields[9] or tonumber(fields[9]) > now) then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'finishedAt', now, unpack(ARGV, 18, fieldsEnd))
redis.call('HDEL', KEYS[1], 'owner')
if ARGV[9] ~= '' then redis.call('SET', KEYS[3], ARGV[9]) end
dropRequests(KEYS[5], KEYS[6])
if ARGV[4] == 'completed' then redis.call('DEL', KEYS[4], KEYS[18]) end
if fields[3] then
  if turnCount > 0 then replaceTurn(KEYS[8], fieldsEnd + 1, turnCount) end
  endTurn(KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], ARGV[3], now, ARGV[10])
end
appendPairs(KEYS[2], ARGV[1], ARGV[2], ARGV[3], fieldsEnd + 1 + turnCount)
-- Messages the run never took: each one said, before the end.
for _, message in ipairs(redis.call('LRANGE', KEYS[19], 0, -1)) do
  local ok, decoded = pcall(cjson.decode, message)
  if ok and type(decoded) == 'table' and decoded.messageId then
    append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'message.undelivered', cjson.encode({ messageId = decoded.messageId }))
  end
end
redis.call('DEL', KEYS[19])
-- A batch's run: counted once (the status check above lets a run end once); the last tells.
if fields[11] then
  local ended = redis.call('HINCRBY', KEYS[20], 'ended', 1)
  if ended == tonumber(redis.call('HGET', KEYS[20], 'total') or '0') then
    redis.call('HSET', KEYS[20], 'completedAt', now)
    append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'batch.completed',
      cjson.encode({ batchId = fields[11], total = ended }))
    redis.call('EXPIRE', KEYS[20], ARGV[7])
    redis.call('EXPIRE', KEYS[21], ARGV[7])
  end
end
local id = append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[6])
compact(KEYS[2])
for _, key in ipairs({ KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[7], KEYS[13], KEYS[4], KEYS[18] }) do
  redis.call('EXPIRE', key, ARGV[7])
end
local parent = ''
if fields[4] then
  if fields[4] ~= ARGV[11] then
    parent = 'unreported'
  else
    -- The child's result, for its parent's delegation: recorded once, and the parent may resume
    -- when it was the last.
    local index = tonumber(fields[6] or '0')
    local result = cjson.encode({
      index = index, runId = ARGV[3], status = ARGV[13], summary = ARGV[14],
      usage = cjson.decode(ARGV[15]), durationMs = now - tonumber(fields[7] or now),
    })
    local finished = cjson.encode({ childRunId = ARGV[3], index = index, status = ARGV[13], summary = ARGV[14] })
    if resolveRequest(KEYS[14], KEYS[15], KEYS[16], KEYS[17], ARGV[12], ARGV[2], fields[4], fields[5] or '', ARGV[3], 'child',
        result, 'child.finished', finished, '') == 'last' then
      parent = 'ready'
    end
  end
end
return { id, parent, fields[8] or '' }
