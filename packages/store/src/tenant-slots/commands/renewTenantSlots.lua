--[[
  Renews the leases of a worker's slots of one tenant while their attempts run (called as the
  worker renews its BullMQ locks). A slot is renewed only while the attempt that took it still
  holds it; the others are answered as lost (the lease ran out and the slot went to another run,
  or another attempt of the run took it over).

  Input:
    KEYS[1] running         sorted set: run id -> its lease expiry (epoch ms)
    KEYS[2] holders         hash: run id -> the fencing token of the attempt holding it

    ARGV[1] leaseMs         the new lease, from now
    ARGV[2] ttlMs           how long the keys stay after their last write
    ARGV[3...] held         pairs: a run id, the fencing token of the attempt holding its slot

  Output:
    the run ids of `held` whose slot is not theirs any more
]]

--- @include "includes/nowMs"

local expiry = nowMs() + tonumber(ARGV[1])
local held = { unpack(ARGV, 3) }
local lost = {}
for i = 1, #held, 2 do
  local runId = held[i]
  if redis.call('HGET', KEYS[2], runId) == held[i + 1] and redis.call('ZSCORE', KEYS[1], runId) then
    redis.call('ZADD', KEYS[1], expiry, runId)
  else
    lost[#lost + 1] = runId
  end
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[2]))
return lost
