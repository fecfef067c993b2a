--[[
  Appends the events given in ARGV as (type, data) pairs, from index `from` to the end.
]]
--- @include "includes/append"
local function appendPairs(stream, channel, maxlen, runId, from)
  for i = from, #ARGV, 2 do append(stream, channel, maxlen, runId, ARGV[i], ARGV[i + 1]) end
end
