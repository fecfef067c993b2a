--[[
  Ends a session run's turn: moves its entries into the session's transcript, takes the run off
  the session's queue, and marks the session active (its keys live `ttl` seconds more). Every key is
  in the session's hash slot, so the turn is written once, in the step that ends the run.
]]
local function endTurn(turn, sessionRecord, sessionQueue, transcript, sessionRuns, runId, now, ttl)
  local entries = redis.call('LRANGE', turn, 0, -1)
  for i = 1, #entries, 500 do
    redis.call('RPUSH', transcript, unpack(entries, i, math.min(i + 499, #entries)))
  end
  redis.call('DEL', turn)
  redis.call('LREM', sessionQueue, 1, runId)
  redis.call('HSET', sessionRecord, 'updatedAt', now)
  for _, key in ipairs({ sessionRecord, transcript, sessionRuns }) do redis.call('EXPIRE', key, ttl) end
end
