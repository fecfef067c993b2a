--[[
  Helpers the scripts share.

  append(stream, channel, maxlen, runId, etype, data)
    Appends one event to a run's stream (capped) and publishes it, in the same script as whatever
    else the caller changes: ids only increase, and a reader that subscribes before it reads the
    backlog misses nothing. An event's time is its stream id's (milliseconds), so it is not stored
    twice. Returns the event id.
  appendPairs(stream, channel, maxlen, runId, from, count)
    Appends the events given in ARGV as (type, data) pairs.
  compact(stream)
    Rewrites a short stream at its real size.
  terminal(status)
    Whether a status is one a run ends in.
  nowMs()
    Redis's time in epoch ms, so that hosts' clocks do not matter.
]]
local function append(stream, channel, maxlen, runId, etype, data)
  local id = redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 't', etype, 'd', data)
  redis.call('PUBLISH', channel, '{"id":"' .. id .. '","runId":"' .. runId .. '","type":"' .. etype .. '","data":' .. data .. '}')
  return id
end
-- Appends the events given in ARGV as (type, data) pairs from index `from`, `count` of them (all when nil).
local function appendPairs(stream, channel, maxlen, runId, from, count)
  local last = #ARGV
  if count then last = from + 2 * count - 1 end
  for i = from, last, 2 do append(stream, channel, maxlen, runId, ARGV[i], ARGV[i + 1]) end
end
-- Redis preallocates 4 KB for a stream's newest node: a short log is rewritten at its real size.
local function compact(stream)
  if redis.call('XLEN', stream) <= 100 then
    redis.call('RESTORE', stream, 0, redis.call('DUMP', stream), 'REPLACE')
  end
end
local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
