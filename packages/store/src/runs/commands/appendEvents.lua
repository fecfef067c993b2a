--[[
  Appends events to a run's log, in order and in one step, unless the run has ended or (with a
  token) another worker owns it.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token, '' for any owner
    ARGV[5...] events       (type, data JSON) pairs

  Output:
    how many events were appended, or false (the run is missing or has ended, or another worker
    owns it)
]]

--- @include "includes/lifecycle"
--- @include "includes/appendPairs"

local status = redis.call('HGET', KEYS[1], 'status')
if not status or terminal(status) then return false end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[4] then return false end
appendPairs(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 5)
return (#ARGV - 4) / 2
