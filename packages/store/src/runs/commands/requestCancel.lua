--[[
  Flags the run for cancellation and tells every worker, which stops the run at once. An
  interrupt is only flagged: the worker running it stops at its next safe point, when it next
  saves the checkpoint (after the tool call or model turn in flight).

  Input:
    KEYS[1] record          the run record (hash)

    ARGV[1] channel         the cancel channel, heard by every worker
    ARGV[2] runId
    ARGV[3] mode            'cancel' or 'interrupt'

  Output:
    the status before the request, 'missing', or the terminal status (nothing is done)
]]

--- @include "includes/lifecycle"

local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
local step = ARGV[3] == 'interrupt' and 'request an interrupt' or 'request a cancel'
if not allowed(step, status) then return status end
if ARGV[3] == 'interrupt' then
  -- A cancel already asked for stands.
  if not redis.call('HGET', KEYS[1], 'cancelRequested') then redis.call('HSET', KEYS[1], 'cancelRequested', 'interrupt') end
else
  redis.call('HSET', KEYS[1], 'cancelRequested', '1')
  redis.call('PUBLISH', ARGV[1], ARGV[2])
end
return status
