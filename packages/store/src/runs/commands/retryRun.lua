--[[
  A retryable failure: the run goes back to queued, with `run.retrying`.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] attempt         the attempt to come (the one that failed, plus one)
    ARGV[5] delayMs         the backoff before the next attempt
    ARGV[6] error           the error (JSON ErrorBody)
    ARGV[7] token           the caller's fencing token

  Output:
    the id of `run.retrying`, or false (the run is missing or has ended, or another worker owns it)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"

local fields = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not allowed('retry', fields[1]) or fields[2] ~= ARGV[7] then return false end
redis.call('HSET', KEYS[1], 'status', 'queued')
return append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.retrying', cjson.encode({
  attempt = tonumber(ARGV[4]),
  delayMs = tonumber(ARGV[5]),
  error = cjson.decode(ARGV[6]),
}))
