--[[
  Removes an endpoint: its hash, its due, in-flight and log sets. Its deliveries and chains expire
  by themselves; its pump finds it gone and stops.

  Input:
    KEYS[1] endpoints       the tenant's endpoint ids (sorted set)
    KEYS[2] endpoint        the endpoint (hash)
    KEYS[3] due             its deliveries to try (sorted set)
    KEYS[4] inflight        the deliveries its pump is trying (sorted set)
    KEYS[5] log             its delivery log (sorted set)

    ARGV[1] id

  Output:
    1, or 0 when there was no such endpoint
]]

if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 1
