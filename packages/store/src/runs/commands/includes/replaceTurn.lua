--[[
  Rewrites a session run's turn (its transcript entries so far, JSON each, in the run's `turn`
  list) from ARGV[from .. from + count - 1].
]]
local function replaceTurn(turn, from, count)
  redis.call('DEL', turn)
  for i = from, from + count - 1, 500 do
    redis.call('RPUSH', turn, unpack(ARGV, i, math.min(i + 499, from + count - 1)))
  end
end
