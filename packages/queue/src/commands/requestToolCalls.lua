--[[
  The model called client tools: each call is recorded as a pending request (its call, its state),
  with the deadline they share and how many wait for an output, the events emitted before it are
  appended, then `tool.requested` for each call in order, and the run waits for input. Done again
  for the same requests (a worker that took the run over after a crash redoes the step), nothing
  is recorded twice: the run waits again. Earlier turns' requests keep their state only.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] toolCalls       the client tool calls the run waits on (hash)
    KEYS[4] toolOutputs     their outputs (hash)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5] deadline        when the calls time out (epoch ms)
    ARGV[6] ttl             how long the requests are kept (s)
    ARGV[7] callCount       how many calls follow
    ARGV[8...] rest         callCount (requestId, tool.requested data JSON) pairs, then (type, data
                            JSON) pairs of events

  Output:
    1 (the run now waits for the outputs), 2 (these requests were recorded already: the run waits
    again), 0 (another worker owns the run, or it is not running) or -1 (a cancel was requested, or the run has ended)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"
--- @include "includes/compact"

local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested')
local refused = refusedOwnerStep('request tool outputs', fields[1], fields[2], fields[3], ARGV[4])
if refused then return refused end
local count = tonumber(ARGV[7])
local calls = { unpack(ARGV, 8, 7 + 2 * count) }
for i = 8 + 2 * count, #ARGV, 2 do append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'status', 'waiting_for_input')
if redis.call('HEXISTS', KEYS[3], 's:' .. calls[1]) == 1 then return 2 end
-- The previous turn's calls and outputs go; their states stay (`s:<id>`, a few bytes each), so an
-- output posted late for one of them is still told it was received or timed out (409), not unknown.
local stale = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[3])) do
  if string.sub(field, 1, 2) ~= 's:' then stale[#stale + 1] = field end
end
if #stale > 0 then redis.call('HDEL', KEYS[3], unpack(stale)) end
redis.call('DEL', KEYS[4])
local order = {}
for i = 1, #calls, 2 do order[#order + 1] = calls[i] end
redis.call('HSET', KEYS[3], 'deadline', ARGV[5], 'pending', count, 'order', table.concat(order, ' '))
for i = 1, #calls, 2 do
  redis.call('HSET', KEYS[3], 'q:' .. calls[i], calls[i + 1], 's:' .. calls[i], 'pending')
  append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'tool.requested', calls[i + 1])
end
redis.call('EXPIRE', KEYS[3], ARGV[6])
compact(KEYS[2])
return 1
