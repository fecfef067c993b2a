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
-- The step by the status it leads to.
local STEP = {
  waiting_for_input = 'sleep again (woken early)',
  waiting_for_children = 'wait for children again (woken early)',
  queued = 'release (shutdown)',
}
local step = STEP[ARGV[2]]
if not step then error('setStatus does not lead to ' .. ARGV[2]) end
if not allowed(step, fields[1]) or fields[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2])
return 1
