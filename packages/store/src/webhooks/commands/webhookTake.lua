--[[
  An endpoint's pump takes the deliveries due now (at most `max`), moving them from `due` to
  `inflight`, and renews its lease. At the start of an activation (`recover`), the deliveries left
  in flight by an activation that died (its worker killed) go back to `due` first: one pump job per
  endpoint exists, so none of them is being tried.

  Input:
    KEYS[1] endpoint        the endpoint (hash)
    KEYS[2] due             its deliveries to try (sorted set)
    KEYS[3] inflight        the deliveries its pump is trying (sorted set)

    ARGV[1] max             deliveries taken at most
    ARGV[2] deliveryPrefix  the key of a delivery with no delivery id
    ARGV[3] leaseMs         how long the pump's lease lasts from now (ms)
    ARGV[4] recover         1 at the start of an activation

  Output:
    false (the endpoint is gone) or { url, secret (sealed), enabled, the next due time after those
    taken ('' for none), then (id, runId, eventId, type, message, payload, token, attempts,
    createdAt) per delivery taken }
]]

--- @include "includes/nowMs"

local ep = redis.call('HMGET', KEYS[1], 'url', 'secret', 'enabled')
if not ep[1] then return false end
local now = nowMs()
if ARGV[4] == '1' then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do redis.call('ZADD', KEYS[2], now, id) end
  redis.call('DEL', KEYS[3])
end
redis.call('HSET', KEYS[1], 'pump', now + tonumber(ARGV[3]))
local reply = { ep[1], ep[2] or '', ep[3] or '0', '' }
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[2], id)
  local d = redis.call('HMGET', ARGV[2] .. id, 'runId', 'eventId', 'type', 'message', 'payload', 'token', 'attempts', 'createdAt', 'status')
  if d[1] and d[9] == 'pending' then
    redis.call('ZADD', KEYS[3], now, id)
    reply[#reply + 1] = id
    for i = 1, 8 do reply[#reply + 1] = d[i] or '' end
  end
end
local nextDue = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if nextDue[2] then reply[4] = nextDue[2] end
return reply
