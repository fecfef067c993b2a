--[[
  Tells a crew child's event on its tree's root run too (in the same step, as the root's keys share
  the child's hash slot): appended to the root's log and published on its channel, with the child's
  run id put first in the data (`childRunId`), so whoever watches the root (or its session) sees the
  child's decisions on tool calls and knows which run to decide them on. Nothing when `rootRunId`
  is '' (a run that is no crew child). `data` is a JSON object with at least one field.
]]
--- @include "includes/append"
local function mirrorToRoot(rootEvents, rootChannel, maxlen, rootRunId, childRunId, etype, data)
  if rootRunId == '' then return end
  append(rootEvents, rootChannel, maxlen, rootRunId, etype, '{"childRunId":"' .. childRunId .. '",' .. string.sub(data, 2))
end
