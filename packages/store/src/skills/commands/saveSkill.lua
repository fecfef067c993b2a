--[[
  Writes a skill of a tenant: creates it, replaces every file of it, or changes some files, with
  the tenant's limits checked and its index and totals kept in the same step. Every write takes a
  new version from the tenant's counter, which is the skill's version from then on.

  Input:
    KEYS[1] index         the tenant's skills (hash: name → summary JSON)
    KEYS[2] files         the skill's files (hash: path → content)
    KEYS[3] totals        the tenant's totals (hash: version, bytes)

    ARGV[1] name
    ARGV[2] mode          'create' (refused when it exists), 'replace' (every file, created or not)
                          or 'update' (the files named; it must exist)
    ARGV[3] description   the description of the SKILL.md written, '' when SKILL.md is not written
    ARGV[4] byAgent       '1': a pinned skill is refused
    ARGV[5] pinned        '1' or '0', or '' to keep the skill's (a new one is not pinned)
    ARGV[6] ifVersion     the skill's version the writer read and changed, or '' for no check
    ARGV[7] maxCount      skills a tenant may have
    ARGV[8] maxBytes      bytes of every file of every skill of the tenant
    ARGV[9] maxFiles      files a skill may have
    ARGV[10] setCount     how many path, content pairs the rest starts with
    ARGV[11...] rest      setCount pairs of path and content, then the paths to remove

  Output:
    {'ok', summary JSON, created (1 or 0)}, or a refusal that changed nothing: {'exists'},
    {'missing'}, {'pinned'}, {'changed', version}, {'count', count, max},
    {'bytes', total it would be, max}, {'files', files it would have, max}, {'no_file', path},
    {'clash', file, path} (an update that would make `file` a folder of `path`'s, or `path` a file
    where another needs a folder: the skill could not be written out as folders)
]]

--- @include "includes/nowMs"

local name, mode = ARGV[1], ARGV[2]
local stored = redis.call('HGET', KEYS[1], name)
local summary = stored and cjson.decode(stored) or nil
if mode == 'create' and summary then return {'exists'} end
if not summary and (mode == 'update' or ARGV[6] ~= '') then return {'missing'} end
if summary and ARGV[4] == '1' and summary.pinned then return {'pinned'} end
if summary and ARGV[6] ~= '' and tostring(summary.version) ~= ARGV[6] then
  return {'changed', summary.version}
end
if not summary then
  local count = redis.call('HLEN', KEYS[1])
  if count + 1 > tonumber(ARGV[7]) then return {'count', count, tonumber(ARGV[7])} end
end

local rest = { unpack(ARGV, 11) }
local setCount = tonumber(ARGV[10])
local oldBytes = summary and summary.bytes or 0
local bytes, files = 0, 0
if mode == 'update' then
  bytes, files = oldBytes, summary.files
  for i = 1, setCount do
    local path, content = rest[2 * i - 1], rest[2 * i]
    if redis.call('HEXISTS', KEYS[2], path) == 1 then
      bytes = bytes - redis.call('HSTRLEN', KEYS[2], path)
    else
      files = files + 1
    end
    bytes = bytes + #content
  end
  for i = 2 * setCount + 1, #rest do
    if redis.call('HEXISTS', KEYS[2], rest[i]) == 0 then return {'no_file', rest[i]} end
    bytes = bytes - redis.call('HSTRLEN', KEYS[2], rest[i])
    files = files - 1
  end
  -- The files as they would be: none may be a folder another needs (`scripts` and `scripts/go.sh`).
  local after = {}
  for _, path in ipairs(redis.call('HKEYS', KEYS[2])) do after[path] = true end
  for i = 1, setCount do after[rest[2 * i - 1]] = true end
  for i = 2 * setCount + 1, #rest do after[rest[i]] = nil end
  for path in pairs(after) do
    local at = string.find(path, '/', 1, true)
    while at do
      local folder = string.sub(path, 1, at - 1)
      if after[folder] then return {'clash', folder, path} end
      at = string.find(path, '/', at + 1, true)
    end
  end
else
  for i = 1, setCount do bytes = bytes + #rest[2 * i] end
  files = setCount
end
if files > tonumber(ARGV[9]) then return {'files', files, tonumber(ARGV[9])} end
local total = tonumber(redis.call('HGET', KEYS[3], 'bytes') or '0') - oldBytes + bytes
if total > tonumber(ARGV[8]) then return {'bytes', total, tonumber(ARGV[8])} end

if mode ~= 'update' then redis.call('DEL', KEYS[2]) end
for i = 1, setCount do redis.call('HSET', KEYS[2], rest[2 * i - 1], rest[2 * i]) end
for i = 2 * setCount + 1, #rest do redis.call('HDEL', KEYS[2], rest[i]) end
local version = redis.call('HINCRBY', KEYS[3], 'version', 1)
redis.call('HINCRBY', KEYS[3], 'bytes', bytes - oldBytes)
local now = nowMs()
local pinned = summary and summary.pinned or false
if ARGV[5] ~= '' then pinned = ARGV[5] == '1' end
local json = cjson.encode({
  description = ARGV[3] ~= '' and ARGV[3] or summary.description,
  pinned = pinned,
  version = version,
  bytes = bytes,
  files = files,
  createdAt = summary and summary.createdAt or now,
  updatedAt = now,
})
redis.call('HSET', KEYS[1], name, json)
return {'ok', json, summary and 0 or 1}
