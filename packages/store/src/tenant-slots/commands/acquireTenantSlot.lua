--[[
  Takes one of a tenant's slots for a run about to be claimed (TETHER_TENANT_MAX_RUNNING): at most
  `cap` runs of the tenant hold one at once. Slots whose lease ran out are dropped first. A run
  that has a slot already (handed to it while it waited, or held by an earlier attempt of it whose
  worker lost the run) takes it over; another takes a free one; past the cap it waits in the
  parked set, in the order it first waited (waiting again keeps its place).

  Input:
    KEYS[1] running         sorted set: run id -> its lease expiry (epoch ms)
    KEYS[2] holders         hash: run id -> the fencing token of the attempt holding it
    KEYS[3] parked          sorted set: run id -> when it first waited (epoch ms)

    ARGV[1] runId
    ARGV[2] holder          the attempt's fencing token
    ARGV[3] cap             the slots of one tenant
    ARGV[4] leaseMs         how long the slot stays taken without a renewal
    ARGV[5] ttlMs           how long the keys stay after their last write

  Output:
    {1}: the run holds a slot; or {0, ahead}: it waits, `ahead` runs waiting before it
]]

--- @include "includes/nowMs"
--- @include "includes/dropExpiredSlots"

local runId = ARGV[1]
local ttl = tonumber(ARGV[5])
local now = nowMs()
dropExpiredSlots(KEYS[1], KEYS[2], now)
if redis.call('ZSCORE', KEYS[1], runId) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), runId)
  redis.call('HSET', KEYS[2], runId, ARGV[2])
  redis.call('ZREM', KEYS[3], runId)
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  return {1}
end
redis.call('ZADD', KEYS[3], 'NX', now, runId)
redis.call('PEXPIRE', KEYS[3], ttl)
return {0, redis.call('ZRANK', KEYS[3], runId)}
