--[[
  What a reader's copy of a memory scope at version `since` lacks: nothing when it is current; the
  entries changed since (each id with its JSON, or '' when deleted) when the log still holds them
  all; else every entry ('reset' when the scope's version is behind the reader's: the keys were
  deleted, restored or lost writes in a failover, and the copy must be replaced whatever it holds).

  Input:
    KEYS[1] entries         id → entry JSON (hash)
    KEYS[2] meta            version, bytes (hash)
    KEYS[3] log             the ids changed, newest first (list)

    ARGV[1] since           the version the reader has, or -1 for none

  Output:
    {version}, {version, 'changes', id, json, …}, or {version, 'all' | 'reset', id, json, …}
]]

local version = tonumber(redis.call('HGET', KEYS[2], 'version') or '0')
local since = tonumber(ARGV[1])
if since == version then return {version} end

local missing = version - since
if since >= 0 and missing > 0 and missing <= redis.call('LLEN', KEYS[3]) then
  local ids = redis.call('LRANGE', KEYS[3], 0, missing - 1)
  local seen = {}
  local reply = {version, 'changes'}
  local whole = false
  for _, id in ipairs(ids) do
    if id == '*' then
      whole = true
      break
    end
    if not seen[id] then
      seen[id] = true
      reply[#reply + 1] = id
      reply[#reply + 1] = redis.call('HGET', KEYS[1], id) or ''
    end
  end
  if not whole then return reply end
end

local reply = {version, since > version and 'reset' or 'all'}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do reply[#reply + 1] = all[i] end
return reply
