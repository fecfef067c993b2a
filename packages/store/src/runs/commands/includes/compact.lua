--[[
  Redis preallocates 4 KB for a stream's newest node: a short log (up to 100 events) is rewritten
  at its real size.
]]
local function compact(stream)
  if redis.call('XLEN', stream) <= 100 then
    redis.call('RESTORE', stream, 0, redis.call('DUMP', stream), 'REPLACE')
  end
end
