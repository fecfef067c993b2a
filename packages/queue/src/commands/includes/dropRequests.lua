--[[
  Drops a waitpoint's requests, deadline and counts. Each request's state (`s:<id>`, a few bytes
  each) and the answer tokens (`t:<requestId>:<hash>`) stay, so a late answer is told its request's fate.
]]
local function dropRequests(waitpoint)
  local stale = {}
  for _, field in ipairs(redis.call('HKEYS', waitpoint)) do
    local prefix = string.sub(field, 1, 2)
    if prefix ~= 's:' and prefix ~= 't:' then stale[#stale + 1] = field end
  end
  if #stale > 0 then redis.call('HDEL', waitpoint, unpack(stale)) end
end
