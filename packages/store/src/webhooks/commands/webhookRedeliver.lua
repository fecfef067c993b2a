--[[
  Sends a delivery again: a new delivery of the same message (same message id and payload) to
  the same endpoint, at the end of its run's chain, in the log.

  Input:
    KEYS[1] endpoint        the endpoint (hash)
    KEYS[2] due             its deliveries to try (sorted set)
    KEYS[3] log             its delivery log (sorted set)
    KEYS[4] original        the delivery sent again (hash)
    KEYS[5] delivery        the new delivery (hash)
    KEYS[6] chain           the run's chain to the endpoint (list)

    ARGV[1] id              the new delivery's id
    ARGV[2] originalId
    ARGV[3] deliveryTtl     how long the new delivery's hash stays at most (s)
    ARGV[4] wakeMs          the lease given to a pump being woken (ms)

  Output:
    'wake' (its pump sleeps: wake it), 'ok', 'missing' (no such delivery or endpoint) or
    'disabled' (the endpoint is disabled)
]]

--- @include "includes/nowMs"

local ep = redis.call('HMGET', KEYS[1], 'enabled', 'pump')
if not ep[1] then return 'missing' end
if ep[1] ~= '1' then return 'disabled' end
local d = redis.call('HMGET', KEYS[4], 'endpoint', 'runId', 'eventId', 'type', 'message', 'payload', 'token')
if not d[6] then return 'missing' end
local now = nowMs()
redis.call('HSET', KEYS[5], 'endpoint', d[1], 'runId', d[2], 'eventId', d[3], 'type', d[4], 'message', d[5] or ARGV[2],
  'payload', d[6], 'status', 'pending', 'attempts', 0, 'createdAt', now, 'redeliveryOf', ARGV[2])
if d[7] then redis.call('HSET', KEYS[5], 'token', d[7]) end
redis.call('EXPIRE', KEYS[5], ARGV[3])
redis.call('ZADD', KEYS[3], now, ARGV[1])
if redis.call('RPUSH', KEYS[6], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('EXPIRE', KEYS[6], ARGV[3])
  if tonumber(ep[2] or '0') < now then
    redis.call('HSET', KEYS[1], 'pump', now + tonumber(ARGV[4]))
    return 'wake'
  end
end
redis.call('EXPIRE', KEYS[6], ARGV[3])
return 'ok'
