--[[
  What a resuming worker learns of the client tool calls its run waits on. While some wait for an
  output before the deadline, nothing changes. Past the deadline, the owner marks every call still
  waiting timed out (`tool.timed_out` for each, in call order). Then every call's fate comes back.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] toolCalls       the client tool calls the run waits on (hash)
    KEYS[4] toolOutputs     their outputs (hash)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5...] requestIds   the requests the caller's checkpoint waits on, in call order

  Output:
    { 'ready', requestId, state, output, ... } (state 'received' with the output as stored, or
    'timed_out' with ''), { 'pending', deadline } (some still wait, before the deadline),
    { 'missing' } (one of the requests was never recorded), or { 'not_owner' } (past the
    deadline, but another worker owns the run, or it has ended: nothing is changed)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local requestIds = { unpack(ARGV, 5) }
local meta = redis.call('HMGET', KEYS[3], 'deadline', 'pending')
if not meta[1] then return { 'missing' } end
for _, requestId in ipairs(requestIds) do
  if redis.call('HEXISTS', KEYS[3], 's:' .. requestId) == 0 then return { 'missing' } end
end
if tonumber(meta[2]) > 0 then
  if nowMs() < tonumber(meta[1]) then return { 'pending', meta[1] } end
  local run = redis.call('HMGET', KEYS[1], 'owner', 'status')
  if run[1] ~= ARGV[4] or not allowed('time tool calls out', run[2]) then return { 'not_owner' } end
  for _, requestId in ipairs(requestIds) do
    if redis.call('HGET', KEYS[3], 's:' .. requestId) == 'pending' then
      redis.call('HSET', KEYS[3], 's:' .. requestId, 'timed_out')
      append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'tool.timed_out', cjson.encode({ requestId = requestId }))
    end
  end
  redis.call('HSET', KEYS[3], 'pending', 0)
end
local reply = { 'ready' }
for _, requestId in ipairs(requestIds) do
  local state = redis.call('HGET', KEYS[3], 's:' .. requestId)
  reply[#reply + 1] = requestId
  reply[#reply + 1] = state
  reply[#reply + 1] = state == 'received' and (redis.call('HGET', KEYS[4], requestId) or '') or ''
end
return reply
