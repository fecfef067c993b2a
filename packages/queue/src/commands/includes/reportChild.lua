--[[
  Records a crew child's result in its parent's delegation, once, and appends `child.finished` to
  the parent's log (unless the parent has ended). The parent's keys share the child's hash slot
  (a crew tree lives in its root's). Returns 1 when the child was the last of the delegation to
  report (the parent may resume now), 0 otherwise: another child is still out, the result was
  already recorded, or the parent no longer waits on this delegation (it moved on, or ended).
]]
--- @include "includes/lifecycle"
--- @include "includes/append"
local function reportChild(parentRecord, parentEvents, delegation, channel, maxlen, parentId, childId, call, index, status, summary, usage, durationMs)
  if call == '' or redis.call('HGET', delegation, 'call') ~= call then return 0 end
  local result = cjson.encode({
    index = index, runId = childId, status = status, summary = summary,
    usage = cjson.decode(usage), durationMs = durationMs,
  })
  if redis.call('HSETNX', delegation, 'r:' .. childId, result) == 0 then return 0 end
  local pending = redis.call('HINCRBY', delegation, 'pending', -1)
  local parentStatus = redis.call('HGET', parentRecord, 'status')
  if allowed('report a child', parentStatus) then
    append(parentEvents, channel, maxlen, parentId, 'child.finished',
      cjson.encode({ childRunId = childId, index = index, status = status, summary = summary }))
  end
  if pending <= 0 then return 1 end
  return 0
end
