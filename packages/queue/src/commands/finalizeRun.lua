--[[
  Ends the run once: sets the terminal status and fields (and the final checkpoint), drops the
  spec and the pending question, appends the events emitted before the end and then the terminal
  event (the last one), and lets the run's keys expire after the retention.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] checkpoint      the agent checkpoint (string)
    KEYS[4] spec            the submitted body (string)
    KEYS[5] pending         the question the run waits on (string)
    KEYS[6] metadata        the caller's metadata (string)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] status          'completed', 'failed' or 'cancelled'
    ARGV[5] eventType       the terminal event's type
    ARGV[6] eventData       the terminal event's data (JSON)
    ARGV[7] retention       how long the run's keys stay (s)
    ARGV[8] token           the caller's fencing token, '' for any owner
    ARGV[9] checkpoint      the final checkpoint (JSON), '' to keep the stored one
    ARGV[10] fieldCount     how many field/value pairs follow
    ARGV[11...] pairs       fieldCount field/value pairs of the record, then (type, data JSON)
                            pairs of events

  Output:
    the id of the terminal event, 0 (the run is missing or has already ended) or -1 (another
    worker owns it)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"
--- @include "includes/appendPairs"
--- @include "includes/compact"

local fields = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not fields[1] or terminal(fields[1]) then return 0 end
if ARGV[8] ~= '' and fields[2] ~= ARGV[8] then return -1 end
local fieldsEnd = 10 + 2 * tonumber(ARGV[10])
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'finishedAt', nowMs(), unpack(ARGV, 11, fieldsEnd))
redis.call('HDEL', KEYS[1], 'owner')
if ARGV[9] ~= '' then redis.call('SET', KEYS[3], ARGV[9]) end
redis.call('DEL', KEYS[4], KEYS[5])
appendPairs(KEYS[2], ARGV[1], ARGV[2], ARGV[3], fieldsEnd + 1)
local id = append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[6])
compact(KEYS[2])
for _, key in ipairs({ KEYS[1], KEYS[2], KEYS[3], KEYS[6] }) do redis.call('EXPIRE', key, ARGV[7]) end
return id
