--[[
  Drops a waitpoint's requests (the event ids of their requests, `e:<id>`, and the bodies and order
  of ones moved from the release before, `q:<id>` and `order`), their results, its id, kind, deadline and count. Each
  request's state (`s:<id>`, a few bytes each) and the answer tokens (`t:<requestId>:<hash>`) stay,
  so a late answer is told its request's fate.
]]
local function dropRequests(waitpoint, results)
  local stale = { 'id', 'kind', 'deadline', 'pending', 'order' }
  for _, field in ipairs(redis.call('HKEYS', waitpoint)) do
    local prefix = string.sub(field, 1, 2)
    if prefix == 'e:' or prefix == 'q:' then stale[#stale + 1] = field end
  end
  redis.call('HDEL', waitpoint, unpack(stale))
  redis.call('DEL', results)
end
