--[[
  Saves a memory entry, or replaces one (same id, its creation time kept), unless the scope holds
  the same content already, the entry to replace is gone, or the scope would pass its limits.

  Input:
    KEYS[1] entries         id → entry JSON (hash)
    KEYS[2] order           ids by the time of their last save, in ms (sorted set)
    KEYS[3] digests         SHA-1 of an entry's content → its id (hash)
    KEYS[4] meta            version, bytes, last (the time of the last save) (hash)
    KEYS[5] log             the ids changed, newest first (list)

    ARGV[1] id              the new entry's id (unused when replacing)
    ARGV[2] replaces        the id of the entry to replace, or ''
    ARGV[3] content         the content (for its digest)
    ARGV[4] body            `"content":…,"tags":[…]`: the entry's JSON fields but its id and times
    ARGV[5] maxEntries
    ARGV[6] maxBytes        the most bytes of entry JSON the scope may hold
    ARGV[7] oldest          how many of the oldest entries a refusal for a full scope lists

  Output:
    {'saved', id, createdAt, updatedAt, version}, {'duplicate', id}, {'missing', id}, or
    {'full', 'entries' | 'bytes', id, json, id, json, …} (the oldest entries)
]]

--- @include "includes/nowMs"
--- @include "includes/memoryChanged"

local replaces = ARGV[2]
local digest = redis.sha1hex(ARGV[3])
local same = redis.call('HGET', KEYS[3], digest)
if same and same ~= replaces then return {'duplicate', same} end

local id = ARGV[1]
-- The scope's own clock never goes back and never repeats: every save is later than the last one,
-- so recency orders the saves as they happened, even within one millisecond.
local now = math.max(nowMs(), tonumber(redis.call('HGET', KEYS[4], 'last') or '0') + 1)
local createdAt = now
local oldSize = 0
local old
if replaces ~= '' then
  old = redis.call('HGET', KEYS[1], replaces)
  if not old then return {'missing', replaces} end
  id = replaces
  oldSize = #old
  createdAt = cjson.decode(old).createdAt
end

local json = '{"id":"' .. id .. '",' .. ARGV[4] .. ',"createdAt":' .. createdAt .. ',"updatedAt":' .. now .. '}'
local bytes = tonumber(redis.call('HGET', KEYS[4], 'bytes') or '0') - oldSize + #json
local full
if not old and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then
  full = 'entries'
elseif bytes > tonumber(ARGV[6]) then
  full = 'bytes'
end
if full then
  local reply = {'full', full}
  local ids = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[7]) - 1)
  if #ids > 0 then
    local jsons = redis.call('HMGET', KEYS[1], unpack(ids))
    for i = 1, #ids do
      reply[#reply + 1] = ids[i]
      reply[#reply + 1] = jsons[i] or ''
    end
  end
  return reply
end

if old then
  local oldDigest = redis.sha1hex(cjson.decode(old).content)
  if redis.call('HGET', KEYS[3], oldDigest) == id then redis.call('HDEL', KEYS[3], oldDigest) end
end
redis.call('HSET', KEYS[1], id, json)
redis.call('HSET', KEYS[3], digest, id)
redis.call('ZADD', KEYS[2], now, id)
redis.call('HSET', KEYS[4], 'bytes', bytes, 'last', now)
local version = memoryChanged(KEYS[4], KEYS[5], id)
return {'saved', id, tostring(createdAt), tostring(now), version}
