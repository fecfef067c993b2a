--[[
  Creates a run: its record, its spec and metadata, and `run.queued` (`run.scheduled`, with its
  start time, for a delayed run, whose record the caller gives status `scheduled`), and the event
  its creator names to follow it, in the same step (a schedule's run is never seen without
  `schedule.fired`). A session's run is also
  added to the session (its runs, its queue, and its input as the first entry of its turn), unless
  the session is gone, or busy when the caller asks to be refused then. A crew child joins its
  parent's list of children here, in the step that creates it (the parent's keys share its hash
  slot): a cancel of the parent finds it even when the parent's worker died before recording the
  delegation (`delegateRun`), which would otherwise leave it queued with no job for good.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] spec            the submitted body (string)
    KEYS[4] metadata        the caller's metadata (string)
    KEYS[5] turn            the run's turn so far (list)
    KEYS[6] sessionRecord   the session (hash)
    KEYS[7] sessionRuns     the session's runs (list)
    KEYS[8] sessionQueue    the session's live runs (list)
    KEYS[9] parentChildren  a crew child's parent's children (list)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] spec            the submitted body (JSON)
    ARGV[5] metadata        the caller's metadata (JSON), '' for none
    ARGV[6] session         the session id, '' for a run of no session
    ARGV[7] multitask       'reject': refuse while the session has a live run
    ARGV[8] input           the input as a transcript entry (JSON)
    ARGV[9] runsChannel     the session's channel of new runs
    ARGV[10] sessionTtl     how long the session's keys stay after this (s)
    ARGV[11] parent         a crew child's parent run id, '' for none
    ARGV[12] scheduled      a delayed run's `run.scheduled` data (JSON), '' for a run queued now
    ARGV[13] nextType       an event appended right after `run.queued` (a schedule's
                            `schedule.fired`), '' for none
    ARGV[14] nextData       its data (JSON)
    ARGV[15...] fields      field/value pairs of the new record

  Output:
    the id of `run.queued` (or `run.scheduled`), false (a run with this id exists), 'no_session' (the session is gone)
    or 'busy' (refused: the session has a live run); nothing is changed but on success
]]

--- @include "includes/append"
--- @include "includes/nowMs"

if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local session = ARGV[6]
if session ~= '' then
  if redis.call('HGET', KEYS[6], 'id') ~= session then return 'no_session' end
  if ARGV[7] == 'reject' and redis.call('LLEN', KEYS[8]) > 0 then return 'busy' end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 15))
redis.call('SET', KEYS[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[4], ARGV[5]) end
if session ~= '' then
  redis.call('HSET', KEYS[1], 'session', session)
  redis.call('RPUSH', KEYS[5], ARGV[8])
  redis.call('RPUSH', KEYS[7], ARGV[3])
  redis.call('RPUSH', KEYS[8], ARGV[3])
  redis.call('HINCRBY', KEYS[6], 'runCount', 1)
  redis.call('HSET', KEYS[6], 'lastRunId', ARGV[3], 'updatedAt', nowMs())
  for _, key in ipairs({ KEYS[6], KEYS[7], KEYS[8] }) do redis.call('EXPIRE', key, ARGV[10]) end
end
if ARGV[11] ~= '' then redis.call('RPUSH', KEYS[9], ARGV[3]) end
local id
if ARGV[12] ~= '' then
  id = append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.scheduled', ARGV[12])
else
  id = append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.queued', '{}')
end
if ARGV[13] ~= '' then append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[13], ARGV[14]) end
if session ~= '' then redis.call('PUBLISH', ARGV[9], ARGV[3]) end
return id
