--[[
  A message for a live run: kept in its inbox, oldest first, with `message.received` appended; the
  run takes it at its next turn boundary (the save that puts it in the transcript trims it). An
  ended run takes none; nor does a run holding the most messages it may hold untaken.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] inbox           the messages it has not taken yet (list)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] message         the message, JSON `{ messageId, content }` (also the event's data)
    ARGV[5] pendingMax      how many untaken messages the run may hold

  Output:
    'ok', 'missing' (no such run), 'ended' (the run has ended) or 'full' (pendingMax untaken)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"

local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if not allowed('take a message', status) then return 'ended' end
if redis.call('LLEN', KEYS[3]) >= tonumber(ARGV[5]) then return 'full' end
redis.call('RPUSH', KEYS[3], ARGV[4])
append(KEYS[2], ARGV[1], ARGV[2], ARGV[3], 'message.received', ARGV[4])
return 'ok'
