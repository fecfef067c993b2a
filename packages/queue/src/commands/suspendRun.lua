--[[
  Records the question the run waits on and appends the events emitted before it, then
  `clarify.requested`: the run waits for input. A short event log is rewritten at its real size.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] clarify         the clarify request (hash)
    KEYS[3] events          the run's event log (stream)
    KEYS[4] pending         the question the run waits on (string)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] token           the caller's fencing token
    ARGV[5] requestId
    ARGV[6] expiresAt       the deadline (epoch ms)
    ARGV[7] pending         the question (JSON PendingClarify), also the data of `clarify.requested`
    ARGV[8] clarifyTtl      how long the request is kept (s)
    ARGV[9...] events       (type, data JSON) pairs

  Output:
    the id of `clarify.requested`, 0 (another worker owns the run, or it is not running) or -1 (a cancel was requested,
    or the run has ended)
]]

--- @include "includes/lifecycle"
--- @include "includes/append"
--- @include "includes/appendPairs"
--- @include "includes/compact"

local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested')
local refused = refusedOwnerStep('suspend', fields[1], fields[2], fields[3], ARGV[4])
if refused then return refused end
redis.call('HSET', KEYS[2], 'requestId', ARGV[5], 'status', 'pending', 'expiresAt', ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[8])
redis.call('HSET', KEYS[1], 'status', 'waiting_for_input')
redis.call('SET', KEYS[4], ARGV[7])
appendPairs(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 9)
local id = append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.requested', ARGV[7])
compact(KEYS[3])
return id
