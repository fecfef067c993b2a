--[[
  Resolves one pending request of the waitpoint a run waits on, the first time only: its state
  (in the waitpoint) and result (in its results, beside it) are recorded, the pending count drops
  and the request's event is appended. The last request resolved queues a run asleep on them (`waiting_for_input`); one woken early keeps its
  status, and its attempt finds them before it sleeps again. A crew parent (`waiting_for_children`)
  keeps its status: the caller promotes its job. Questions and client tool calls are checked against
  the deadline (Redis's clock); a child's report counts whenever it comes.

  An answer with a webhook's answer token (its SHA-256 given) needs that token recorded for this
  request (see includes/tokenField) and not used yet; the answer marks it used. The token is
  checked first, before anything that would tell whether the run or the request exists.

  Returns 'ok' (recorded; others still wait), 'last' (recorded, and no request waits any more), or
  why not: 'bad_token', 'token_used', 'no_run', 'no_request' (not a request of the waitpoint the run
  waits on, or of another kind, or not of the waitpoint `waitpointId` when one is named), the request's state ('answered', 'received',
  'reported', 'decided', 'timed_out'), 'ended' (the run has ended) or 'expired' (past the deadline).
]]
--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"
--- @include "includes/tokenField"
local RESOLVED = { question = 'answered', tool_output = 'received', child = 'reported', approval = 'decided' }
local function resolveRequest(record, events, waitpoint, results, channel, maxlen, runId, waitpointId, requestId,
    kind, result, eventType, eventData, tokenHash)
  if tokenHash ~= '' then
    local token = redis.call('HGET', waitpoint, tokenField(requestId, tokenHash))
    if not token then return 'bad_token' end
    if token == 'used' then return 'token_used' end
  end
  local status = redis.call('HGET', record, 'status')
  if not status then return 'no_run' end
  local request = redis.call('HMGET', waitpoint, 's:' .. requestId, 'kind', 'id', 'deadline', 'pending',
    'e:' .. requestId, 'q:' .. requestId)
  if not request[1] then return 'no_request' end
  if request[1] ~= 'pending' then return request[1] end
  -- A run that ended keeps its requests' states only (the rest went with its waitpoint).
  if terminal(status) then return 'ended' end
  -- Of the waitpoint the run waits on (its event, or its body moved from the release before), and of this kind.
  if not (request[6] or request[7]) or request[2] ~= kind then return 'no_request' end
  if waitpointId ~= '' and request[3] ~= waitpointId then return 'no_request' end
  local last = tonumber(request[5]) <= 1
  local step = 'resolve a request'
  if kind == 'child' then step = 'report a child'
  elseif last and status == 'waiting_for_input' then step = 'wake on the last request' end
  if not allowed(step, status) then return 'ended' end
  if kind ~= 'child' and nowMs() >= tonumber(request[4]) then return 'expired' end
  redis.call('HSET', waitpoint, 's:' .. requestId, RESOLVED[kind])
  redis.call('HSET', results, requestId, result)
  if tokenHash ~= '' then redis.call('HSET', waitpoint, tokenField(requestId, tokenHash), 'used') end
  local pending = redis.call('HINCRBY', waitpoint, 'pending', -1)
  if step == 'wake on the last request' then redis.call('HSET', record, 'status', 'queued') end
  append(events, channel, maxlen, runId, eventType, eventData)
  if pending > 0 then return 'ok' end
  return 'last'
end
