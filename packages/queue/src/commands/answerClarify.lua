--[[
  The first answer wins: the request is marked answered, the pending question dropped, the run
  queued again and `clarify.answered` appended. The deadline is checked against Redis's clock.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] clarify         the clarify request (hash)
    KEYS[3] events          the run's event log (stream)
    KEYS[4] pending         the question the run waits on (string)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] requestId
    ARGV[5] answer

  Output:
    'ok', or why not: 'no_run', 'no_request', 'answered' or 'timed_out' (the request's fate),
    'ended' (the run has ended), 'expired' (past the deadline)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'no_run' end
local request = redis.call('HMGET', KEYS[2], 'status', 'expiresAt')
if not request[1] then return 'no_request' end
if request[1] ~= 'pending' then return request[1] end
if terminal(status) then return 'ended' end
if nowMs() >= tonumber(request[2]) then return 'expired' end
redis.call('HSET', KEYS[2], 'status', 'answered', 'answer', ARGV[5])
redis.call('DEL', KEYS[4])
redis.call('HSET', KEYS[1], 'status', 'queued')
append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.answered', cjson.encode({ requestId = ARGV[4], answer = ARGV[5] }))
return 'ok'
