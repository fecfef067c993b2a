--[[
  The run waits on a new waitpoint: its requests are recorded (each one's state `pending`, and the id
  of its event in the log, which holds the request), with their kind, the deadline they share and
  how many are pending, the events emitted
  before it are appended, then the request's event for each in order (`clarify.requested`,
  `tool.requested`, `child.started` or `approval.requested`), and the run waits: for input (a
  question, client tool calls, decisions on tool calls) or for its children (each on the run's list of children, where `createRun` put it; the
  run's life count of children grows). What is left of the earlier waitpoint is each request's
  state and the answer tokens, so a late answer is told its request's fate. Done again for the
  same waitpoint (a worker that took the run over after a crash redoes the step), only the events
  given are appended, no request is recorded twice: the run waits again. A crew child's decisions
  on tool calls are also told on its tree's root run (in the root's hash slot): each
  `approval.requested` there carries `childRunId`, so the one person watching the root, or its
  session, sees them.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] waitpoint       the waitpoint (hash)
    KEYS[4] waitpointResults  its requests' results (hash)
    KEYS[5] children        the run's crew children (list)
    KEYS[6] rootEvents      a crew child's root run's event log (stream; unused for any other run)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5] id              the waitpoint's id
    ARGV[6] deadline        when its requests time out (epoch ms)
    ARGV[7] maxChildren     how many children the run may start over its life ('' unless children)
    ARGV[8] onTimeout       approvals: the decision taken at the deadline ('approve' or 'reject'; '' else)
    ARGV[9] rootChannel     the root run's events channel ('' for a run that is no crew child)
    ARGV[10] rootRunId      the root run's id ('' for a run that is no crew child)
    ARGV[11] count          how many requests follow
    ARGV[12...] rest        count (requestId, kind, request JSON) triples, all of one kind
                            ('question', 'tool_output', 'child' or 'approval'), then (type, data
                            JSON) pairs of events

  Output:
    1 (the run now waits), 2 (this waitpoint was recorded already: the run waits again), 0
    (another worker owns the run, or it is not running), -1 (a cancel was requested, or the run has
    ended) or -2 (the children would pass the run's life limit)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"
--- @include "includes/compact"
--- @include "includes/dropRequests"
--- @include "includes/mirrorToRoot"

local EVENT = {
  question = 'clarify.requested', tool_output = 'tool.requested', child = 'child.started',
  approval = 'approval.requested',
}
local count = tonumber(ARGV[11])
local requestsEnd = 11 + 3 * count
-- (requestId, kind, request JSON) triples.
local requests = { unpack(ARGV, 12, requestsEnd) }
local kind = requests[2]
if not EVENT[kind] then error('not a kind of request: ' .. tostring(kind)) end
for i = 2, #requests, 3 do
  if requests[i] ~= kind then error('a waitpoint holds requests of one kind') end
end
local children = kind == 'child'
local step = children and 'wait for children' or 'wait for input'
local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested', 'childCount')
local refused = refusedOwnerStep(step, fields[1], fields[2], fields[3], ARGV[4])
if refused then return refused end
local status = children and 'waiting_for_children' or 'waiting_for_input'
local function appendEvents()
  for i = requestsEnd + 1, #ARGV, 2 do append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[i], ARGV[i + 1]) end
end
if redis.call('HGET', KEYS[3], 'id') == ARGV[5] then
  appendEvents()
  redis.call('HSET', KEYS[1], 'status', status)
  return 2
end
local total = tonumber(fields[4] or '0') + count
if children and total > tonumber(ARGV[7]) then return -2 end
appendEvents()
dropRequests(KEYS[3], KEYS[4])
-- The hash keeps short values only, so Redis stores it compact: each request is its event's data,
-- in the log (a waiting run appends little, so the log keeps it), found by the event's id.
redis.call('HSET', KEYS[3], 'id', ARGV[5], 'kind', kind, 'deadline', ARGV[6], 'pending', count)
if ARGV[8] ~= '' then redis.call('HSET', KEYS[3], 'onTimeout', ARGV[8]) end
for i = 1, #requests, 3 do
  local id, request = requests[i], requests[i + 2]
  -- A child is on the list since its `createRun` (one a worker of an earlier release created is not).
  if children and not redis.call('LPOS', KEYS[5], id) then redis.call('RPUSH', KEYS[5], id) end
  local eventId = append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], EVENT[kind], request)
  redis.call('HSET', KEYS[3], 's:' .. id, 'pending', 'e:' .. id, eventId)
  if kind == 'approval' then mirrorToRoot(KEYS[6], ARGV[9], ARGV[2], ARGV[10], ARGV[3], EVENT[kind], request) end
end
redis.call('HSET', KEYS[1], 'status', status)
if children then redis.call('HSET', KEYS[1], 'childCount', total) end
compact(KEYS[2])
return 1
