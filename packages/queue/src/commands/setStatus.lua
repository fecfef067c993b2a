--[[
  Sets a non-terminal status while the caller owns the run (a run woken before its answer goes
  back to waiting).

  Input:
    KEYS[1] record          the run record (hash)

    ARGV[1] token           the caller's fencing token
    ARGV[2] status          'queued', 'running' or 'waiting_for_input'

  Output:
    1, or 0 (the run is missing or has ended, or another worker owns it)
]]

--- @include "includes/lifecycle"

local fields = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not fields[1] or terminal(fields[1]) or fields[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2])
return 1
