--[[
  Adds an endpoint to a tenant's, unless the tenant has `max` already.

  Input:
    KEYS[1] endpoints       the tenant's endpoint ids (sorted set)
    KEYS[2] endpoint        the new endpoint (hash)

    ARGV[1] id
    ARGV[2] max             endpoints a tenant may have
    ARGV[3...] fields       field/value pairs of the endpoint (url, events, secret, …)

  Output:
    the creation time (epoch ms), or -1 when the tenant has `max` endpoints already
]]

--- @include "includes/nowMs"

if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
local now = nowMs()
redis.call('HSET', KEYS[2], 'createdAt', now, 'enabled', 1, 'pump', 0, unpack(ARGV, 3))
-- Listed in the order of creation: two endpoints of one millisecond (or a clock that went back) would
-- tie on `now` and list by their ids' random tails, so the score is above the last one's.
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
redis.call('ZADD', KEYS[1], last and math.max(now, tonumber(last) + 1) or now, ARGV[1])
return now
