--[[
  Gives a tenant's slot back at the end of an attempt (whatever the end), if the attempt still
  holds it, then hands every free slot to the oldest runs waiting for one: each is taken out of
  the parked set and holds its slot (holder '') until it takes it up, or until `reserveMs`
  pass. The caller wakes the runs handed a slot.

  Input:
    KEYS[1] running         sorted set: run id -> its lease expiry (epoch ms)
    KEYS[2] holders         hash: run id -> the fencing token of the attempt holding it
    KEYS[3] parked          sorted set: run id -> when it first waited (epoch ms)

    ARGV[1] runId
    ARGV[2] holder          the fencing token that took the slot ('' for a slot handed over and not taken up)
    ARGV[3] cap             the slots of one tenant
    ARGV[4] reserveMs       how long a slot handed to a waiting run stays its own
    ARGV[5] ttlMs           how long the keys stay after their last write

  Output:
    the ids of the runs handed a slot, oldest first (none when no slot is free or no run waits)
]]

--- @include "includes/nowMs"
--- @include "includes/dropExpiredSlots"

local runId = ARGV[1]
local ttl = tonumber(ARGV[5])
local now = nowMs()
dropExpiredSlots(KEYS[1], KEYS[2], now)
-- Another attempt of the run may have taken the slot over (this one lost the run): it stays theirs.
if redis.call('HGET', KEYS[2], runId) == ARGV[2] then
  redis.call('ZREM', KEYS[1], runId)
  redis.call('HDEL', KEYS[2], runId)
end
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
if free <= 0 then return {} end
local handed = redis.call('ZRANGE', KEYS[3], 0, free - 1)
if #handed == 0 then return {} end
for _, id in ipairs(handed) do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), id)
  redis.call('HSET', KEYS[2], id, '')
end
redis.call('ZREM', KEYS[3], unpack(handed))
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return handed
