--[[
  Deletes a session's own keys, unless it has a live run or gained a run since the caller listed
  them. Its runs' keys are deleted by the caller after this (they are in the same hash slot, and no
  run can be added once the record is gone: `createRun` refuses a missing session).

  Input:
    KEYS[1] sessionRecord   the session (hash)
    KEYS[2] sessionRuns     the session's runs (list)
    KEYS[3] sessionQueue    the session's live runs (list)
    KEYS[4] transcript      the session's transcript (list)
    KEYS[5] files           the files for the first run (string)

    ARGV[1] sessionId
    ARGV[2] runCount        how many runs the caller listed

  Output:
    'ok', 'missing' (no such session), 'busy' (a run is live) or 'changed' (a run was added)
]]

if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 'missing' end
if redis.call('LLEN', KEYS[3]) > 0 then return 'busy' end
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[2]) then return 'changed' end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 'ok'
