--[[
  A page of an endpoint's delivery log, newest first, after the delivery `after` (its id, and its
  score should it have left the log since). Deliveries whose hash has expired leave the log.

  Input:
    KEYS[1] log             the endpoint's delivery log (sorted set)

    ARGV[1] deliveryPrefix  the key of a delivery with no delivery id
    ARGV[2] afterId         the last delivery of the page before, '' for the first page
    ARGV[3] afterScore      its score
    ARGV[4] limit           deliveries at most

  Output:
    { more (1 when deliveries follow the page), then (id, score, { field, value, … }) per delivery }
]]

local limit = tonumber(ARGV[4])
local ids
if ARGV[2] == '' then
  ids = redis.call('ZREVRANGE', KEYS[1], 0, limit, 'WITHSCORES')
else
  local rank = redis.call('ZREVRANK', KEYS[1], ARGV[2])
  if rank then
    ids = redis.call('ZREVRANGE', KEYS[1], rank + 1, rank + 1 + limit, 'WITHSCORES')
  else
    ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[3], '-inf', 'WITHSCORES', 'LIMIT', 0, limit + 1)
  end
end
local reply = { 0 }
local count = 0
for i = 1, #ids, 2 do
  if count == limit then
    reply[1] = 1
    break
  end
  local fields = redis.call('HGETALL', ARGV[1] .. ids[i])
  if #fields == 0 then
    redis.call('ZREM', KEYS[1], ids[i])
  else
    reply[#reply + 1] = ids[i]
    reply[#reply + 1] = ids[i + 1]
    reply[#reply + 1] = fields
    count = count + 1
  end
end
return reply
