--[[
  Adds one model turn's usage to its tenant's ledger: every field of the day's hash by its
  increment (integers only: tokens, micro-dollars, runs), the totals among them (fields without
  a ':') to the month's hash as well, and both hashes' time to live renewed. HINCRBY only, so
  turns recorded at the same time by any number of workers add up exactly.

  Input:
    KEYS[1] day             hash: the tenant's usage on the turn's UTC day
    KEYS[2] month           hash: the tenant's usage totals in the turn's UTC month

    ARGV[1] ttlSeconds      how long both hashes stay after this write
    ARGV[2...] increments   field, increment, field, increment, …

  Output:
    { day tokens, day micro-dollars, month tokens, month micro-dollars } after the turn
]]

local ttl = tonumber(ARGV[1])
local increments = { unpack(ARGV, 2) }
for i = 1, #increments, 2 do
  local field, by = increments[i], increments[i + 1]
  redis.call('HINCRBY', KEYS[1], field, by)
  if not string.find(field, ':', 1, true) then
    redis.call('HINCRBY', KEYS[2], field, by)
  end
end
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
local day = redis.call('HMGET', KEYS[1], 'tot', 'usd')
local month = redis.call('HMGET', KEYS[2], 'tot', 'usd')
return { tonumber(day[1] or 0), tonumber(day[2] or 0), tonumber(month[1] or 0), tonumber(month[2] or 0) }
