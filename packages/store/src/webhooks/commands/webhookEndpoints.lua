--[[
  A tenant's endpoints, oldest first, each hash whole (the caller drops what it must not show).

  Input:
    KEYS[1] endpoints       the tenant's endpoint ids (sorted set)

    ARGV[1] endpointPrefix  the key of an endpoint with no id

  Output:
    { id, { field, value, … } } per endpoint
]]

local reply = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local fields = redis.call('HGETALL', ARGV[1] .. id)
  if #fields > 0 then
    reply[#reply + 1] = id
    reply[#reply + 1] = fields
  end
end
return reply
