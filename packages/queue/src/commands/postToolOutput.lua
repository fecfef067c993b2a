--[[
  A client posts the output of a tool call the run waits on. The first output wins: the request
  is marked received, the output stored and `tool.output_received` appended; the last of the
  turn's calls to get its output queues the run again (when it sleeps on them: one woken early
  keeps its status). The deadline is checked against Redis's
  clock.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] toolCalls       the client tool calls the run waits on (hash)
    KEYS[4] toolOutputs     their outputs (hash)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] requestId
    ARGV[5] output          the output as stored (JSON { output, isError })
    ARGV[6] isError         '1' when the output reports an error, else '0'

  Output:
    'ok' (recorded; other calls still wait), 'last' (recorded, and it was the last: the run is
    queued), or why not: 'no_run', 'no_request', 'received' or 'timed_out' (the request's fate),
    'ended' (the run has ended), 'expired' (past the deadline)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'no_run' end
local state = redis.call('HGET', KEYS[3], 's:' .. ARGV[4])
if not state then return 'no_request' end
if state ~= 'pending' then return state end
if not allowed('post a tool output', status) then return 'ended' end
if nowMs() >= tonumber(redis.call('HGET', KEYS[3], 'deadline')) then return 'expired' end
redis.call('HSET', KEYS[3], 's:' .. ARGV[4], 'received')
redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
local ttl = redis.call('TTL', KEYS[3])
if ttl > 0 then redis.call('EXPIRE', KEYS[4], ttl) end
local pending = redis.call('HINCRBY', KEYS[3], 'pending', -1)
append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'tool.output_received',
  cjson.encode({ requestId = ARGV[4], isError = ARGV[6] == '1' }))
if pending > 0 then return 'ok' end
if not allowed('post the last tool output', status) then return 'ok' end
redis.call('HSET', KEYS[1], 'status', 'queued')
return 'last'
