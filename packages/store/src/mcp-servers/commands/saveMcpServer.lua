--[[
  Registers an MCP server of a tenant, or replaces the one of that name (keeping its creation
  time), within the tenant's limit on servers.

  Input:
    KEYS[1] servers   the tenant's servers (hash: name → server JSON)

    ARGV[1] name
    ARGV[2] server    the server as JSON, without its times
    ARGV[3] max       servers a tenant may have

  Output:
    {'created' | 'replaced', server JSON with createdAt and updatedAt (epoch ms)}, or
    {'full', count} (nothing changed)
]]

--- @include "includes/nowMs"

local now = nowMs()
local existing = redis.call('HGET', KEYS[1], ARGV[1])
local createdAt = now
if existing then
  createdAt = cjson.decode(existing).createdAt
else
  local count = redis.call('HLEN', KEYS[1])
  if count >= tonumber(ARGV[3]) then return {'full', count} end
end
local server = cjson.decode(ARGV[2])
server.createdAt = createdAt
server.updatedAt = now
local json = cjson.encode(server)
redis.call('HSET', KEYS[1], ARGV[1], json)
if existing then return {'replaced', json} end
return {'created', json}
