--[[
  Changes an endpoint that exists: sets the fields given, removes those named. Enabling it again
  (`enabled` 1) forgets when and why it was disabled and since when it failed.

  Input:
    KEYS[1] endpoint        the endpoint (hash)

    ARGV[1] setCount        how many field/value pairs follow
    ARGV[2...] fields       setCount field/value pairs, then the names of fields to remove

  Output:
    1, or 0 when the endpoint does not exist
]]

if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local rest = { unpack(ARGV, 2) }
local pairsEnd = 2 * tonumber(ARGV[1])
for i = 1, pairsEnd, 2 do
  if rest[i] == 'enabled' and rest[i + 1] == '1' and redis.call('HGET', KEYS[1], 'enabled') ~= '1' then
    redis.call('HDEL', KEYS[1], 'disabledAt', 'disabledReason', 'failingSince')
  end
  redis.call('HSET', KEYS[1], rest[i], rest[i + 1])
end
for i = pairsEnd + 1, #rest do redis.call('HDEL', KEYS[1], rest[i]) end
return 1
