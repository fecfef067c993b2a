--[[
  A worker takes the run for an attempt: it becomes the run's owner (the fencing token every later
  write checks), the run is marked running with the highest attempt number seen, `run.started` is
  appended the first time (and startedAt set, in epoch ms by Redis's clock), then `attempt.started` (resumed when a checkpoint
  exists, at the step the last save recorded). What the attempt needs comes back in the same step.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] spec            the submitted body (string)
    KEYS[4] checkpoint      the agent checkpoint (string)
    KEYS[5] sessionQueue    the live runs of the run's session (list)
    KEYS[6] parentRecord    a crew child's parent's record (hash)
    KEYS[7] inbox           the messages the run has not taken yet (list)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the claiming worker's fencing token (workerId:lockToken)
    ARGV[5] attempt         the attempt number
    ARGV[6] workerId
    ARGV[7] parentId        the crew parent named by the job, '' for none

  Output:
    { 'ok', spec, checkpoint, session, tenant, inbox } ('' where absent; inbox: how many messages
    wait to be taken), { 'missing' }, { 'cancel' } (a cancel was
    requested, or the run is a crew child whose parent is gone, has ended or is being cancelled), { 'wait', runId } (another run of its session is ahead of it: nothing is changed),
    { 'early', runAt } (the run is still scheduled, until runAt in epoch ms: nothing is changed),
    { 'expire', expiresAt } (the run never started and its deadline, epoch ms, has passed by Redis's
    clock: nothing is started, and the caller ends it with `expire`),
    or { status } (the run has ended: 'completed', 'failed' or 'cancelled')
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local fields = redis.call('HMGET', KEYS[1], 'status', 'cancelRequested', 'attempts', 'startedAt', 'step', 'session', 'parent', 'tenant', 'runAt', 'expiresAt')
local status = fields[1]
if not status then return { 'missing' } end
-- Never started past its deadline, whoever takes it at that instant: the check and the start are
-- this one step, against Redis's clock. A run that started before it is no longer subject to it.
if fields[10] and not fields[4] and allowed('expire', status) and tonumber(fields[10]) <= nowMs() then
  return { 'expire', tonumber(fields[10]) }
end
-- Never claimed while scheduled: its job comes up at its time and `dueRun` queues it first; a
-- job a worker took early (its time changed meanwhile) is delayed again until the record's time.
if status == 'scheduled' and not fields[2] then return { 'early', tonumber(fields[9] or '0') } end
if status == 'scheduled' then return { 'cancel' } end
if not allowed('claim', status) then return { status } end
if fields[2] then return { 'cancel' } end
-- A crew child goes only while its parent waits for it.
if fields[7] and fields[7] == ARGV[7] then
  local parent = redis.call('HMGET', KEYS[6], 'status', 'cancelRequested')
  if not parent[1] or terminal(parent[1]) or parent[2] then return { 'cancel' } end
end
-- One run of a session executes at a time: the head of its queue.
if fields[6] then
  local head = redis.call('LINDEX', KEYS[5], 0)
  if head and head ~= ARGV[3] then
    if not allowed('wait for the session', status) then return { status } end
    return { 'wait', head }
  end
end
local attempts = math.max(tonumber(fields[3] or '0'), tonumber(ARGV[5]))
if fields[4] then
  redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'status', 'running', 'attempts', attempts)
else
  redis.call('HSET', KEYS[1], 'owner', ARGV[4], 'status', 'running', 'attempts', attempts, 'startedAt', nowMs())
  append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.started', cjson.encode({ attempt = tonumber(ARGV[5]), workerId = ARGV[6] }))
end
-- The attempt starts here: a run with a checkpoint resumes at the step the last save recorded.
local checkpoint = redis.call('GET', KEYS[4])
local step = fields[5] or '0'
append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'attempt.started', cjson.encode({
  attempt = tonumber(ARGV[5]),
  resumed = checkpoint and true or false,
  step = checkpoint and tonumber(step) or 0,
}))
return { 'ok', redis.call('GET', KEYS[3]) or '', checkpoint or '', fields[6] or '', fields[8] or '',
  redis.call('LLEN', KEYS[7]) }
