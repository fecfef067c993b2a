--[[
  Appends one event to a run's stream (capped) and publishes it, in the same script as whatever
  else the caller changes: ids only increase, and a reader that subscribes before it reads the
  backlog misses nothing. An event's time is its stream id's (milliseconds), so it is not stored
  twice. Returns the event id.
]]
local function append(stream, channel, maxlen, runId, etype, data)
  local id = redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 't', etype, 'd', data)
  redis.call('PUBLISH', channel, '{"id":"' .. id .. '","runId":"' .. runId .. '","type":"' .. etype .. '","data":' .. data .. '}')
  return id
end
