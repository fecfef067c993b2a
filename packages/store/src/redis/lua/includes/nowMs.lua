--[[
  Redis's own time in epoch ms, so that the hosts' clocks do not matter.
]]
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
