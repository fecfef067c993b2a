--[[
  A scheduled run's job came up: when its start time (the record's, which a reschedule may have
  moved) has come, the run is queued with `run.queued`, and goes on as any queued run (its tenant's
  line, its session's turn, its claim); before it, nothing changes and the caller delays the job
  until then. A run that is no longer scheduled is left as it is (its claim decides).

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId

  Output:
    { 'due' } (queued now), { 'early', runAt } (epoch ms), { 'expire', expiresAt } (its deadline,
    epoch ms, has passed by Redis's clock: nothing is changed, and the caller ends it with `expire`),
    { 'cancel' } (a cancel was asked for: its claim ends it), { 'missing' }, or { status } (not
    scheduled)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

local fields = redis.call('HMGET', KEYS[1], 'status', 'runAt', 'cancelRequested', 'expiresAt')
local status = fields[1]
if not status then return { 'missing' } end
if not allowed('start on time', status) then return { status } end
-- Its deadline to start by came first: it is never queued (as `claimRun` checks).
if fields[4] and tonumber(fields[4]) <= nowMs() then return { 'expire', tonumber(fields[4]) } end
if fields[3] then return { 'cancel' } end
local runAt = tonumber(fields[2] or '0')
if runAt > nowMs() then return { 'early', runAt } end
redis.call('HSET', KEYS[1], 'status', 'queued')
append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.queued', '{}')
return { 'due' }
