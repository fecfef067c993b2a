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
    KEYS[3] pending         the question the run waits on (string; before the waitpoint)
    KEYS[4] clarify         that question's request (hash; before the waitpoint)
    KEYS[5] toolCalls       the client tool calls (hash; before the waitpoint)
    KEYS[6] toolOutputs     their outputs (hash; before the waitpoint)
    KEYS[7] delegation      the delegation (hash; before the waitpoint)

    ARGV[1] kind            what the run's checkpoint waits on: 'question', 'tool_output' or 'children'
    ARGV[2] question        the question (JSON `PendingClarify`) for 'question', else ''

  Output:
    'moved', or 'none' (nothing to move)
]]

--- @include "includes/lifecycle"

local status = redis.call('HGET', KEYS[1], 'status')
if not status or terminal(status) or redis.call('HEXISTS', KEYS[2], 'id') == 1 then return 'none' end

local function hash(key)
  local flat = redis.call('HGETALL', key)
  local fields = {}
  for i = 1, #flat, 2 do fields[flat[i]] = flat[i + 1] end
  return fields
end
local function keepTtl(key)
  local ttl = redis.call('TTL', key)
  if ttl > redis.call('TTL', KEYS[2]) then redis.call('EXPIRE', KEYS[2], ttl) end
end

if ARGV[1] == 'question' then
  local question = cjson.decode(ARGV[2])
  local id = question.requestId
  local request = hash(KEYS[4])
  if not request.status then return 'none' end
  local fields = {
    'id', id, 'deadline', request.expiresAt, 'pending', request.status == 'pending' and 1 or 0, 'order', id,
    'k:' .. id, 'question', 'q:' .. id, redis.call('GET', KEYS[3]) or ARGV[2], 's:' .. id, request.status,
  }
  if request.answer then
    fields[#fields + 1] = 'r:' .. id
    fields[#fields + 1] = request.answer
  end
  for field, value in pairs(request) do
    if string.sub(field, 1, 2) == 't:' then
      fields[#fields + 1] = 't:' .. id .. ':' .. string.sub(field, 3)
      fields[#fields + 1] = value
    end
  end
  redis.call('HSET', KEYS[2], unpack(fields))
  keepTtl(KEYS[4])
  redis.call('DEL', KEYS[3], KEYS[4])
  return 'moved'
end

if ARGV[1] == 'tool_output' then
  local calls = hash(KEYS[5])
  if not calls.order then return 'none' end
  local outputs = hash(KEYS[6])
  local fields = { 'id', string.match(calls.order, '^%S+'), 'deadline', calls.deadline, 'pending', calls.pending,
    'order', calls.order }
  for field, value in pairs(calls) do
    if string.sub(field, 1, 2) == 's:' or string.sub(field, 1, 2) == 'q:' then
      fields[#fields + 1] = field
      fields[#fields + 1] = value
    end
  end
  for id in string.gmatch(calls.order, '%S+') do
    fields[#fields + 1] = 'k:' .. id
    fields[#fields + 1] = 'tool_output'
    if outputs[id] then
      fields[#fields + 1] = 'r:' .. id
      fields[#fields + 1] = outputs[id]
    end
  end
  redis.call('HSET', KEYS[2], unpack(fields))
  keepTtl(KEYS[5])
  redis.call('DEL', KEYS[5], KEYS[6])
  return 'moved'
end

local delegation = hash(KEYS[7])
if not delegation.call then return 'none' end
local children = {}
for field, value in pairs(delegation) do
  if string.sub(field, 1, 2) == 'c:' then children[#children + 1] = { string.sub(field, 3), tonumber(value) } end
end
table.sort(children, function(a, b) return a[2] < b[2] end)
local order = {}
local fields = { 'id', delegation.call, 'deadline', delegation.deadline, 'pending', delegation.pending }
for _, child in ipairs(children) do
  local id, index = child[1], child[2]
  order[#order + 1] = id
  local result = delegation['r:' .. id]
  for _, value in ipairs({ 'k:' .. id, 'child', 'q:' .. id, cjson.encode({ childRunId = id, index = index }),
      's:' .. id, result and 'reported' or 'pending' }) do
    fields[#fields + 1] = value
  end
  if result then
    fields[#fields + 1] = 'r:' .. id
    fields[#fields + 1] = result
  end
end
fields[#fields + 1] = 'order'
fields[#fields + 1] = table.concat(order, ' ')
redis.call('HSET', KEYS[2], unpack(fields))
keepTtl(KEYS[7])
redis.call('DEL', KEYS[7])
return 'moved'
