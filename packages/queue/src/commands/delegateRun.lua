--[[
  A crew parent hands tasks to its children (created just before, one `createRun` each): the
  delegation is recorded (its tool call, size, pending count, deadline, and each child's task index
  as `c:<childRunId>`), the children are on the run's list of children (`createRun` put them
  there), the events emitted before it are appended, then `child.started` for each
  child, and the run waits for its children. Done again for the same call (a worker that took the
  run over after a crash redoes the step), it changes nothing.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] delegation      the delegation (hash)
    KEYS[4] children        the run's crew children (list)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5] call            the delegation's tool call id
    ARGV[6] deadline        when the children time out (epoch ms)
    ARGV[7] maxChildren     how many children the run may start over its life
    ARGV[8] childCount      how many children follow
    ARGV[9...] rest         childCount (childRunId, child.started data JSON) pairs, then (type,
                            data JSON) pairs of events

  Output:
    1 (the run now waits for its children), 2 (this delegation was recorded already), 0 (another
    worker owns the run, or it is not running), -1 (a cancel was requested, or the run has ended) or -2 (the children
    would pass the run's life limit)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"
--- @include "includes/compact"

local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested', 'childCount')
local refused = refusedOwnerStep('delegate', fields[1], fields[2], fields[3], ARGV[4])
if refused then return refused end
if redis.call('HGET', KEYS[3], 'call') == ARGV[5] then
  redis.call('HSET', KEYS[1], 'status', 'waiting_for_children')
  return 2
end
local count = tonumber(ARGV[8])
local total = tonumber(fields[4] or '0') + count
if total > tonumber(ARGV[7]) then return -2 end
local childrenEnd = 8 + 2 * count
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[3], 'call', ARGV[5], 'size', count, 'pending', count, 'deadline', ARGV[6])
redis.call('HSET', KEYS[1], 'status', 'waiting_for_children', 'childCount', total)
for i = childrenEnd + 1, #ARGV, 2 do append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[i], ARGV[i + 1]) end
local function startChildren(from)
  for i = from, childrenEnd, 2 do
    -- Each child is on the list since its `createRun` (one a worker of an earlier release created is not).
    if not redis.call('LPOS', KEYS[4], ARGV[i]) then redis.call('RPUSH', KEYS[4], ARGV[i]) end
    redis.call('HSET', KEYS[3], 'c:' .. ARGV[i], cjson.decode(ARGV[i + 1]).index)
    append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'child.started', ARGV[i + 1])
  end
end
startChildren(9)
compact(KEYS[2])
return 1
