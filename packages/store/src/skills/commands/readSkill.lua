--[[
  Reads what `read_skill` shows of a skill, in one step: its summary, its SKILL.md, and the path
  and size of each of its files.

  Input:
    KEYS[1] index   the tenant's skills (hash: name → summary JSON)
    KEYS[2] files   the skill's files (hash)

    ARGV[1] name

  Output:
    false (no such skill), or {summary JSON, SKILL.md, path, bytes, path, bytes, …}
]]

local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then return false end
local reply = { stored, redis.call('HGET', KEYS[2], 'SKILL.md') or '' }
for _, path in ipairs(redis.call('HKEYS', KEYS[2])) do
  reply[#reply + 1] = path
  reply[#reply + 1] = redis.call('HSTRLEN', KEYS[2], path)
end
return reply
