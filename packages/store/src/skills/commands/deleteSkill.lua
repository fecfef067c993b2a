--[[
  Deletes a skill of a tenant: its files and its entry in the tenant's index, with the tenant's
  totals kept (its bytes taken off, a new version).

  Input:
    KEYS[1] index     the tenant's skills (hash: name → summary JSON)
    KEYS[2] files     the skill's files (hash)
    KEYS[3] totals    the tenant's totals (hash: version, bytes)

    ARGV[1] name
    ARGV[2] byAgent   '1': a pinned skill is refused

  Output:
    'ok', 'missing' or 'pinned' (nothing changed)
]]

local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then return 'missing' end
local summary = cjson.decode(stored)
if ARGV[2] == '1' and summary.pinned then return 'pinned' end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'bytes', -summary.bytes)
redis.call('HINCRBY', KEYS[3], 'version', 1)
return 'ok'
