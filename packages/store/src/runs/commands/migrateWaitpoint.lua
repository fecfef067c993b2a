--[[
  Moves what a live run of the release before the waitpoint waits on into its waitpoint, in one
  step: a question (its `clarify:<id>` hash, and the `pending` string while unanswered), a model
  turn's client tool calls (the `tool-calls` and `tool-outputs` hashes) or a delegation (its hash).
  Each request keeps its state and its answer, output or result; the question keeps its answer
  tokens, the tool calls the states of earlier turns' calls. The old keys are deleted. A run that
  has a waitpoint already, or has ended, or waits on nothing there, is left alone. To be removed
  one release after the waitpoint.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] waitpoint       the waitpoint (hash)
    KEYS[3] waitpointResults  its requests' results (hash)
    KEYS[4] pending         the question the run waits on (string; before the waitpoint)
    KEYS[5] clarify         that question's request (hash; before the waitpoint)
    KEYS[6] toolCalls       the client tool calls (hash; before the waitpoint)
    KEYS[7] toolOutputs     their outputs (hash; before the waitpoint)
    KEYS[8] delegation      the delegation (hash; before the waitpoint)

    ARGV[1] kind            what the run's checkpoint waits on: 'question', 'tool_output' or 'children'
    ARGV[2] question        the question (JSON `PendingClarify`) for 'question', else ''

  Output:
    'moved', or 'none' (nothing to move)
]]

--- @include "includes/lifecycle"
--- @include "includes/tokenField"

local status = redis.call('HGET', KEYS[1], 'status')
if not status or terminal(status) or redis.call('HEXISTS', KEYS[2], 'id') == 1 then return 'none' end

local function hash(key)
  local flat = redis.call('HGETALL', key)
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  return fields
end
-- Writes the waitpoint: its fields, each request's body (`q:<id>`: its event's id is not known
-- here) and their order, their results. Like a live run's other keys, it does not expire before
-- the run ends.
local function write(fields, requests, results)
  local order = {}
  for _, request in ipairs(requests) do
    order[#order + 1] = request[1]
    fields[#fields + 1] = 'q:' .. request[1]
    fields[#fields + 1] = request[2]
  end
  fields[#fields + 1] = 'order'
  fields[#fields + 1] = table.concat(order, ' ')
  redis.call('HSET', KEYS[2], unpack(fields))
  if #results > 0 then redis.call('HSET', KEYS[3], unpack(results)) end
end

if ARGV[1] == 'question' then
  local question = cjson.decode(ARGV[2])
  local id = question.requestId
  local request = hash(KEYS[5])
  if not request.status then return 'none' end
  local fields = { 'id', id, 'kind', 'question', 'deadline', request.expiresAt,
    'pending', request.status == 'pending' and 1 or 0, 's:' .. id, request.status }
  for field, value in pairs(request) do
    if string.sub(field, 1, 2) == 't:' then
      fields[#fields + 1] = tokenField(id, string.sub(field, 3))
      fields[#fields + 1] = value
    end
  end
  write(fields, { { id, redis.call('GET', KEYS[4]) or ARGV[2] } }, request.answer and { id, request.answer } or {})
  redis.call('DEL', KEYS[4], KEYS[5])
  return 'moved'
end

if ARGV[1] == 'tool_output' then
  local calls = hash(KEYS[6])
  if not calls.order then return 'none' end
  local outputs = hash(KEYS[7])
  local fields = { 'id', string.match(calls.order, '^%S+'), 'kind', 'tool_output', 'deadline', calls.deadline,
    'pending', calls.pending }
  -- Every call's state, this turn's and earlier turns'.
  for field, value in pairs(calls) do
    if string.sub(field, 1, 2) == 's:' then
      fields[#fields + 1] = field
      fields[#fields + 1] = value
    end
  end
  local requests, results = {}, {}
  for id in string.gmatch(calls.order, '%S+') do
    requests[#requests + 1] = { id, calls['q:' .. id] }
    if outputs[id] then
      results[#results + 1] = id
      results[#results + 1] = outputs[id]
    end
  end
  write(fields, requests, results)
  redis.call('DEL', KEYS[6], KEYS[7])
  return 'moved'
end

local delegation = hash(KEYS[8])
if not delegation.call then return 'none' end
local children = {}
for field, value in pairs(delegation) do
  if string.sub(field, 1, 2) == 'c:' then children[#children + 1] = { string.sub(field, 3), tonumber(value) } end
end
table.sort(children, function(a, b) return a[2] < b[2] end)
local fields = { 'id', delegation.call, 'kind', 'child', 'deadline', delegation.deadline,
  'pending', delegation.pending }
local requests, results = {}, {}
for _, child in ipairs(children) do
  local id, index = child[1], child[2]
  local result = delegation['r:' .. id]
  requests[#requests + 1] = { id, cjson.encode({ childRunId = id, index = index }) }
  fields[#fields + 1] = 's:' .. id
  fields[#fields + 1] = result and 'reported' or 'pending'
  if result then
    results[#results + 1] = id
    results[#results + 1] = result
  end
end
write(fields, requests, results)
redis.call('DEL', KEYS[8])
return 'moved'
