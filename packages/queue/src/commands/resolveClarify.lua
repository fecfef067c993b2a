--[[
  What a resuming worker learns of its question. Once the deadline has passed, the owner marks it
  timed out, drops the pending question and appends `clarify.timed_out`.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] clarify         the clarify request (hash)
    KEYS[3] events          the run's event log (stream)
    KEYS[4] pending         the question the run waits on (string)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] requestId
    ARGV[5] token           the caller's fencing token

  Output:
    { 'answered', answer }, { 'timed_out' }, { 'pending', expiresAt }, { 'missing' }, or
    { 'not_owner' } (past the deadline, but another worker owns the run, or it has ended: nothing is
    changed)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local request = redis.call('HMGET', KEYS[2], 'status', 'expiresAt', 'answer')
if not request[1] then return { 'missing' } end
if request[1] == 'answered' then return { 'answered', request[3] } end
if request[1] == 'timed_out' then return { 'timed_out' } end
if nowMs() < tonumber(request[2]) then return { 'pending', request[2] } end
local run = redis.call('HMGET', KEYS[1], 'owner', 'status')
if run[1] ~= ARGV[5] or not allowed('time a question out', run[2]) then return { 'not_owner' } end
redis.call('HSET', KEYS[2], 'status', 'timed_out')
redis.call('DEL', KEYS[4])
append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.timed_out', cjson.encode({ requestId = ARGV[4] }))
return { 'timed_out' }
