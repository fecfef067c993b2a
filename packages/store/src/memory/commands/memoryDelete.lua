--[[
  Deletes one memory entry.

  Input:
    KEYS[1] entries         id → entry JSON (hash)
    KEYS[2] order           ids by the time of their last save (sorted set)
    KEYS[3] digests         SHA-1 of an entry's content → its id (hash)
    KEYS[4] meta            version, bytes (hash)
    KEYS[5] log             the ids changed, newest first (list)

    ARGV[1] id

  Output:
    1, or 0 when the scope holds no such entry
]]

--- @include "includes/memoryChanged"

local id = ARGV[1]
local old = redis.call('HGET', KEYS[1], id)
if not old then return 0 end
local digest = redis.sha1hex(cjson.decode(old).content)
if redis.call('HGET', KEYS[3], digest) == id then redis.call('HDEL', KEYS[3], digest) end
redis.call('HDEL', KEYS[1], id)
redis.call('ZREM', KEYS[2], id)
redis.call('HINCRBY', KEYS[4], 'bytes', -#old)
memoryChanged(KEYS[4], KEYS[5], id)
return 1
