--[[
  What a resuming worker learns of the waitpoint its run waits on. While some request is pending
  before the deadline, nothing changes. Past the deadline, the owner marks each question, client
  tool call or approval still pending timed out (`clarify.timed_out`, `tool.timed_out`, or
  `approval.resolved` with the waitpoint's `onTimeout` decision, in order); children are not timed
  out here (their worker ends each one, which reports it). Then each request's fate
  comes back. A crew child's decisions taken so are also told on its tree's root run
  (`approval.resolved` with `childRunId`).

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] waitpoint       the waitpoint (hash)
    KEYS[4] waitpointResults  its requests' results (hash)
    KEYS[5] rootEvents      a crew child's root run's event log (stream; unused for any other run)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5] id              the waitpoint the caller's checkpoint waits on
    ARGV[6] rootChannel     the root run's events channel ('' for a run that is no crew child)
    ARGV[7] rootRunId       the root run's id ('' for a run that is no crew child)
    ARGV[8...] requestIds   its requests, in order

  Output:
    { 'ready', requestId, state, result, ... } (state 'answered', 'received', 'reported' or 'decided' with
    the result as stored, or 'timed_out' with ''), { 'pending', deadline } (some still wait),
    { 'missing' } (the waitpoint, or one of these requests of it, was never recorded), or { 'not_owner' }
    (past the deadline, but another worker owns the run, or it is not running: nothing is changed)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"
--- @include "includes/mirrorToRoot"

local TIMED_OUT = { question = 'clarify.timed_out', tool_output = 'tool.timed_out', approval = 'approval.resolved' }
local requestIds = { unpack(ARGV, 8) }
local meta = redis.call('HMGET', KEYS[3], 'id', 'deadline', 'pending', 'kind', 'onTimeout')
if meta[1] ~= ARGV[5] then return { 'missing' } end
for _, requestId in ipairs(requestIds) do
  -- Its event (or its body, moved from the release before) and its state.
  local request = redis.call('HMGET', KEYS[3], 'e:' .. requestId, 'q:' .. requestId, 's:' .. requestId)
  if not ((request[1] or request[2]) and request[3]) then return { 'missing' } end
end
local pending = tonumber(meta[3])
if pending > 0 then
  if nowMs() < tonumber(meta[2]) then return { 'pending', meta[2] } end
  local run = redis.call('HMGET', KEYS[1], 'owner', 'status')
  if run[1] ~= ARGV[4] or not allowed('expire a waitpoint', run[2]) then return { 'not_owner' } end
  local timedOut = TIMED_OUT[meta[4]]
  for _, requestId in ipairs(requestIds) do
    if timedOut and redis.call('HGET', KEYS[3], 's:' .. requestId) == 'pending' then
      redis.call('HSET', KEYS[3], 's:' .. requestId, 'timed_out')
      pending = redis.call('HINCRBY', KEYS[3], 'pending', -1)
      local data = { requestId = requestId }
      -- A decision's deadline takes the policy's decision, and says so.
      if meta[4] == 'approval' then
        data = { requestId = requestId, decision = meta[5] or 'reject', by = 'timeout', timedOut = true }
      end
      local encoded = cjson.encode(data)
      append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], timedOut, encoded)
      if meta[4] == 'approval' then mirrorToRoot(KEYS[5], ARGV[6], ARGV[2], ARGV[7], ARGV[3], timedOut, encoded) end
    end
  end
  if pending > 0 then return { 'pending', meta[2] } end
end
local reply = { 'ready' }
for _, requestId in ipairs(requestIds) do
  reply[#reply + 1] = requestId
  reply[#reply + 1] = redis.call('HGET', KEYS[3], 's:' .. requestId)
  reply[#reply + 1] = redis.call('HGET', KEYS[4], requestId) or ''
end
return reply
