--[[
  Deletes every entry of a memory scope. The version goes on counting (a reader's cache of the
  scope must never see an old version number again), and the log says that everything changed.

  Input:
    KEYS[1] entries         id → entry JSON (hash)
    KEYS[2] order           ids by the time of their last save (sorted set)
    KEYS[3] digests         SHA-1 of an entry's content → its id (hash)
    KEYS[4] meta            version, bytes (hash)
    KEYS[5] log             the ids changed, newest first (list)

  Output:
    how many entries were deleted
]]

--- @include "includes/memoryChanged"

local count = redis.call('HLEN', KEYS[1])
if count == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[5])
redis.call('HSET', KEYS[4], 'bytes', 0)
memoryChanged(KEYS[4], KEYS[5], '*')
return count
