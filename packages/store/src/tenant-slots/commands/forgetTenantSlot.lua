--[[
  Forgets a run that ended without an attempt (cancelled while queued, waiting for a slot, or
  handed one it had not taken up yet): out of the line, and a slot handed to it and not taken up
  (holder '') is free again, for the runs waiting (they look again after their own delay). A slot
  an attempt holds is left to that attempt, which gives it back when it ends.

  Input:
    KEYS[1] running         sorted set: run id -> its lease expiry (epoch ms)
    KEYS[2] holders         hash: run id -> the fencing token of the attempt holding it
    KEYS[3] parked          sorted set: run id -> when it first waited (epoch ms)

    ARGV[1] runId

  Output:
    1 when the run was in line or held a slot handed to it, else 0
]]

local runId = ARGV[1]
local forgot = redis.call('ZREM', KEYS[3], runId)
if redis.call('HGET', KEYS[2], runId) == '' then
  redis.call('ZREM', KEYS[1], runId)
  redis.call('HDEL', KEYS[2], runId)
  forgot = 1
end
return forgot
