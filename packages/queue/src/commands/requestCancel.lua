--[[
  Flags the run for cancellation and tells every worker.

  Input:
    KEYS[1] record          the run record (hash)

    ARGV[1] channel         the cancel channel, heard by every worker
    ARGV[2] runId

  Output:
    the status before the request, 'missing', or the terminal status (nothing is done)
]]

--- @include "includes/lifecycle"

local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if terminal(status) then return status end
redis.call('HSET', KEYS[1], 'cancelRequested', '1')
redis.call('PUBLISH', ARGV[1], ARGV[2])
return status
