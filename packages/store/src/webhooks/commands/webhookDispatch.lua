--[[
  Records a run's deliveries: for each event after the run's cursor, one delivery to each enabled
  endpoint of the tenant that subscribes to its type or that the event names as its approver (an
  `approval.requested` whose policy names one: sent whatever the endpoint subscribes to, and once
  when it subscribes too), and that existed at the event's time, at the end of the run's chain for
  that endpoint (a chain's head is the delivery tried; the others wait for it to end, so a run's
  events reach an endpoint in their order). The cursor then names the last event, in the same step:
  an event's deliveries are recorded once, whoever dispatches it and how often. A delivery's id is
  derived from the run, the event and the endpoint; its payload is the event's (the message id
  first). The reply names the endpoints that got a delivery due: those whose pump sleeps (its lease
  has run out) to be woken, their lease set to `wakeMs` from now so that one caller wakes them, and
  the others, whose pump may be waiting in the caller's process. An endpoint's log is trimmed to
  `logMax` deliveries and `logAgeMs` once it holds 64 more.

  Input:
    KEYS[1] endpoints       the tenant's endpoint ids (sorted set)
    KEYS[2] cursor          the run's dispatch cursor (string: an event id)

    ARGV[1] runId
    ARGV[2] endpointPrefix  the key of an endpoint with no id
    ARGV[3] duePrefix       the key of an endpoint's due deliveries with no endpoint id
    ARGV[4] logPrefix       the key of an endpoint's delivery log with no endpoint id
    ARGV[5] deliveryPrefix  the key of a delivery with no delivery id
    ARGV[6] chainPrefix     the key of this run's chain to an endpoint with no endpoint id
    ARGV[7] cursorTtl       how long the cursor stays after this (s)
    ARGV[8] deliveryTtl     how long a new delivery's hash stays at most (s)
    ARGV[9] logMax          deliveries an endpoint's log keeps
    ARGV[10] logAgeMs       how long an endpoint's log keeps a delivery (ms)
    ARGV[11] wakeMs         the lease given to a pump being woken (ms)
    ARGV[12...] events      (event id, type, payload after the id, sealed answer token or '', approver
                            endpoint id or '') per event, in order

  Output:
    { deliveries recorded, then per endpoint with a delivery due now 'w:<id>' (wake its pump) or
    'd:<id>' (its pump is awake) }
]]

--- @include "includes/nowMs"
--- @include "includes/streamIdAfter"

local now = nowMs()
local cursor = redis.call('GET', KEYS[2]) or '0'
local events = { unpack(ARGV, 12) }
local endpoints = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local ep = redis.call('HMGET', ARGV[2] .. id, 'events', 'createdAt', 'enabled', 'pump')
  if ep[1] and ep[3] == '1' then
    endpoints[#endpoints + 1] = { id = id, events = ' ' .. ep[1] .. ' ', createdAt = tonumber(ep[2]), pump = tonumber(ep[4] or '0') }
  end
end
local recorded = 0
local wake = {}
for i = 1, #events, 5 do
  local eventId, etype, rest, token, approver = events[i], events[i + 1], events[i + 2], events[i + 3], events[i + 4]
  if streamIdAfter(eventId, cursor) then
    local at = tonumber(string.match(eventId, '^(%d+)'))
    for _, ep in ipairs(endpoints) do
      local wanted = ep.id == approver or string.find(ep.events, ' ' .. etype .. ' ', 1, true)
        or string.find(ep.events, ' * ', 1, true)
      if wanted and ep.createdAt <= at then
        local id = 'whd_' .. string.sub(redis.sha1hex(ARGV[1] .. ':' .. eventId .. ':' .. ep.id), 1, 26)
        local key = ARGV[5] .. id
        redis.call('HSET', key, 'endpoint', ep.id, 'runId', ARGV[1], 'eventId', eventId, 'type', etype,
          'payload', '{"id":"' .. id .. '",' .. rest, 'status', 'pending', 'createdAt', now)
        if token ~= '' then redis.call('HSET', key, 'token', token) end
        redis.call('EXPIRE', key, ARGV[8])
        local log = ARGV[4] .. ep.id
        if redis.call('ZADD', log, now, id) == 1 and redis.call('ZCARD', log) > tonumber(ARGV[9]) + 64 then
          redis.call('ZREMRANGEBYSCORE', log, '-inf', now - tonumber(ARGV[10]))
          redis.call('ZREMRANGEBYRANK', log, 0, -tonumber(ARGV[9]) - 1)
        end
        local chain = ARGV[6] .. ep.id
        if redis.call('RPUSH', chain, id) == 1 then
          redis.call('ZADD', ARGV[3] .. ep.id, now, id)
          if ep.pump < now then
            ep.pump = now + tonumber(ARGV[11])
            redis.call('HSET', ARGV[2] .. ep.id, 'pump', ep.pump)
            wake[ep.id] = 'w:'
          elseif not wake[ep.id] then
            wake[ep.id] = 'd:'
          end
        end
        redis.call('EXPIRE', chain, ARGV[8])
        recorded = recorded + 1
      end
    end
    cursor = eventId
  end
end
redis.call('SET', KEYS[2], cursor, 'EX', ARGV[7])
local reply = { recorded }
for id, kind in pairs(wake) do reply[#reply + 1] = kind .. id end
return reply
