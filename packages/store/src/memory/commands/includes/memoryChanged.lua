--[[
  Records a change of a memory scope: its version goes up by one and the changed entry's id ('*'
  for every entry) goes on the head of its log, which keeps the last 256 changes. Log entry k (from
  0) made version `version - k`, so a reader at version v needs the first `version - v` ids.
]]
local function memoryChanged(meta, log, id)
  local version = redis.call('HINCRBY', meta, 'version', 1)
  redis.call('LPUSH', log, id)
  redis.call('LTRIM', log, 0, 255)
  return version
end
