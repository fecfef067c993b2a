--[[
  Ends one attempt of a delivery (or the delivery without one), as its pump found it: `delivered`
  (a 2xx answer), `retrying` (failed; tried again at `nextAt`), `failed` (failed, and out of
  time), `disabled` (not sent: the endpoint is disabled) or `dropped` (not sent: nothing to send).
  An attempt made counts, with its HTTP status and error. The endpoint's `failingSince` is the
  first failed attempt since its last success: once it is `disableAfterMs` old, a failed attempt
  disables the endpoint. A delivery that ends leaves its run's chain, and the next one of the chain
  becomes due at once.

  Input:
    KEYS[1] endpoint        the endpoint (hash)
    KEYS[2] due             its deliveries to try (sorted set)
    KEYS[3] inflight        the deliveries its pump is trying (sorted set)
    KEYS[4] delivery        the delivery (hash)
    KEYS[5] chain           the delivery's run's chain to the endpoint (list)

    ARGV[1] deliveryId
    ARGV[2] outcome         'delivered', 'retrying', 'failed', 'disabled' or 'dropped'
    ARGV[3] httpStatus      the answer's status, '' for none
    ARGV[4] error           why the attempt failed, '' for no error
    ARGV[5] nextAt          when a retrying delivery is tried again (epoch ms)
    ARGV[6] retention       how long an ended delivery stays (s)
    ARGV[7] disableAfterMs  how long an endpoint may fail without a success before it is disabled
    ARGV[8] reason          why it is disabled, then

  Output:
    { the delivery's status after this, 1 when this disabled the endpoint else 0 }
]]

--- @include "includes/nowMs"

local id, outcome = ARGV[1], ARGV[2]
redis.call('ZREM', KEYS[3], id)
local status = redis.call('HGET', KEYS[4], 'status')
if status and status ~= 'pending' then return { status, 0 } end
local now = nowMs()
local exists = redis.call('EXISTS', KEYS[1]) == 1
if not exists and outcome ~= 'dropped' then outcome = 'dropped' end
local disabled = 0
if status and (outcome == 'delivered' or outcome == 'retrying' or outcome == 'failed') then
  redis.call('HINCRBY', KEYS[4], 'attempts', 1)
  redis.call('HSET', KEYS[4], 'lastAttemptAt', now)
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[4], 'lastStatus', ARGV[3]) else redis.call('HDEL', KEYS[4], 'lastStatus') end
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[4], 'lastError', ARGV[4]) else redis.call('HDEL', KEYS[4], 'lastError') end
  if outcome == 'delivered' then
    redis.call('HDEL', KEYS[1], 'failingSince')
  else
    redis.call('HSETNX', KEYS[1], 'failingSince', now)
    local ep = redis.call('HMGET', KEYS[1], 'failingSince', 'enabled')
    if ep[2] == '1' and now - tonumber(ep[1]) >= tonumber(ARGV[7]) then
      redis.call('HSET', KEYS[1], 'enabled', 0, 'disabledAt', now, 'disabledReason', ARGV[8])
      disabled = 1
    end
  end
end
if status and outcome == 'retrying' then
  redis.call('HSET', KEYS[4], 'nextAttemptAt', ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[5], id)
  return { 'pending', disabled }
end
if status then
  redis.call('HSET', KEYS[4], 'status', outcome, 'finishedAt', now)
  redis.call('HDEL', KEYS[4], 'nextAttemptAt')
  redis.call('EXPIRE', KEYS[4], ARGV[6])
end
redis.call('LREM', KEYS[5], 1, id)
local nextId = redis.call('LINDEX', KEYS[5], 0)
if nextId and exists then redis.call('ZADD', KEYS[2], 'NX', now, nextId) end
return { status and outcome or 'gone', disabled }
