--[[
  What a resuming worker learns of the waitpoint its run waits on. While some request is pending
  before the deadline, nothing changes. Past the deadline, the owner marks each question or client
  tool call still pending timed out (`clarify.timed_out` or `tool.timed_out`, in order); children
  are not timed out here (their worker ends each one, which reports it). Then each request's fate
  comes back.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] waitpoint       the waitpoint (hash)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5] id              the waitpoint the caller's checkpoint waits on
    ARGV[6...] requestIds   its requests, in order

  Output:
    { 'ready', requestId, state, result, ... } (state 'answered', 'received' or 'reported' with
    the result as stored, or 'timed_out' with ''), { 'pending', deadline } (some still wait),
    { 'missing' } (the waitpoint or one of its requests was never recorded), or { 'not_owner' }
    (past the deadline, but another worker owns the run, or it is not running: nothing is changed)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local TIMED_OUT = { question = 'clarify.timed_out', tool_output = 'tool.timed_out' }
local requestIds = { unpack(ARGV, 6) }
local meta = redis.call('HMGET', KEYS[3], 'id', 'deadline', 'pending')
if meta[1] ~= ARGV[5] then return { 'missing' } end
for _, requestId in ipairs(requestIds) do
  if redis.call('HEXISTS', KEYS[3], 'k:' .. requestId) == 0 then return { 'missing' } end
end
local pending = tonumber(meta[3])
if pending > 0 then
  if nowMs() < tonumber(meta[2]) then return { 'pending', meta[2] } end
  local run = redis.call('HMGET', KEYS[1], 'owner', 'status')
  if run[1] ~= ARGV[4] or not allowed('expire a waitpoint', run[2]) then return { 'not_owner' } end
  for _, requestId in ipairs(requestIds) do
    local request = redis.call('HMGET', KEYS[3], 's:' .. requestId, 'k:' .. requestId)
    if request[1] == 'pending' and TIMED_OUT[request[2]] then
      redis.call('HSET', KEYS[3], 's:' .. requestId, 'timed_out')
      pending = redis.call('HINCRBY', KEYS[3], 'pending', -1)
      append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], TIMED_OUT[request[2]], cjson.encode({ requestId = requestId }))
    end
  end
  if pending > 0 then return { 'pending', meta[2] } end
end
local reply = { 'ready' }
for _, requestId in ipairs(requestIds) do
  local request = redis.call('HMGET', KEYS[3], 's:' .. requestId, 'r:' .. requestId)
  reply[#reply + 1] = requestId
  reply[#reply + 1] = request[1]
  reply[#reply + 1] = request[2] or ''
end
return reply
