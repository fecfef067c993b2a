--[[
  Gives a scheduled run a new start time and appends `run.scheduled` with it. Only a run still
  scheduled, with no cancel asked for: one whose time has come (queued, running, ...) or that is
  being cancelled keeps what it has. The caller then moves the job (`changeDelay`); a job it could
  not move (taken by a worker just now) is delayed again by its `dueRun`, which reads this time.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] runAt           the new start time (epoch ms)
    ARGV[5] data            `run.scheduled`'s data (JSON)

  Output:
    'ok' (`run.scheduled` appended); 'missing', 'cancel' (a cancel was asked for), or the run's status
    when it is not scheduled (nothing is changed)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"

local fields = redis.call('HMGET', KEYS[1], 'status', 'cancelRequested')
local status = fields[1]
if not status then return 'missing' end
if not allowed('reschedule', status) then return status end
if fields[2] then return 'cancel' end
redis.call('HSET', KEYS[1], 'runAt', ARGV[4])
append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.scheduled', ARGV[5])
return 'ok'
