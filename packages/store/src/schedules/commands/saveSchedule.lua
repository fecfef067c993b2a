--[[
  Adds a schedule to a tenant's (`create`), within the tenant's limit and unless the name is taken,
  or replaces one that exists (`replace`). The JSON is stored as given (cjson would turn an empty
  array of the run's body into an object), its times set by the caller.

  Input:
    KEYS[1] index       the tenant's schedules (hash: name → schedule JSON)

    ARGV[1] name
    ARGV[2] schedule    the schedule as JSON
    ARGV[3] mode        'create' or 'replace'
    ARGV[4] max         schedules a tenant may have

  Output:
    'ok', 'exists', 'full' or 'missing' (nothing changed but with 'ok')
]]

local exists = redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1
if ARGV[3] == 'create' then
  if exists then return 'exists' end
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then return 'full' end
elseif not exists then
  return 'missing'
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'ok'
