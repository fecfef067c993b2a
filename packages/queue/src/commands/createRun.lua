--[[
  Creates a run: its record, its spec and metadata, and `run.queued`.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] spec            the submitted body (string)
    KEYS[4] metadata        the caller's metadata (string)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] spec            the submitted body (JSON)
    ARGV[5] metadata        the caller's metadata (JSON), '' for none
    ARGV[6...] fields       field/value pairs of the new record

  Output:
    the id of `run.queued`, or false (a run with this id exists: nothing is changed)
]]

--- @include "includes/append"

if redis.call('EXISTS', KEYS[1]) == 1 then return false end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('SET', KEYS[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[4], ARGV[5]) end
return append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'run.queued', '{}')
