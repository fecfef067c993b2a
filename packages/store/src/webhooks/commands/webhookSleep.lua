--[[
  An endpoint's pump, with nothing in flight and nothing it took left, asks whether it may sleep:
  not while a delivery is due now (it takes it first). Asleep, its lease is 0, so the next
  dispatch that makes a delivery due wakes it.

  Input:
    KEYS[1] endpoint        the endpoint (hash)
    KEYS[2] due             its deliveries to try (sorted set)

  Output:
    false (the endpoint is gone), { 'busy' } (a delivery is due now), or { 'asleep', the next due
    time (epoch ms), '' for none }
]]

--- @include "includes/nowMs"

if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] and tonumber(first[2]) <= nowMs() then return { 'busy' } end
redis.call('HSET', KEYS[1], 'pump', 0)
return { 'asleep', first[2] or '' }
