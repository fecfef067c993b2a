--[[
  Whether a run in this status has ended (it never leaves it).
]]
local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
