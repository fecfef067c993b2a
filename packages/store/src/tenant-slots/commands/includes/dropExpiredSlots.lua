--[[
  Drops a tenant's slots whose lease has run out (their holder died, or a run handed a slot never
  took it up), from the running set and the holders hash.
]]
local function dropExpiredSlots(runningKey, holdersKey, now)
  local expired = redis.call('ZRANGEBYSCORE', runningKey, '-inf', now)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', runningKey, '-inf', now)
    redis.call('HDEL', holdersKey, unpack(expired))
  end
end
