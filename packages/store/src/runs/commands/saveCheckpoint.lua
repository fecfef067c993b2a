--[[
  Appends the events emitted since the last write and saves the checkpoint, with the progress the
  record shows (todos, usage, step, model), only while the caller still owns the run and no cancel was
  requested. That check is the fence that stops a worker whose lock expired.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] checkpoint      the agent checkpoint (string)
    KEYS[3] events          the run's event log (stream)
    KEYS[4] turn            a session run's turn so far (list)
    KEYS[5] inbox           the messages the run has not taken yet (list)

    ARGV[1] token           the caller's fencing token
    ARGV[2] checkpoint      the checkpoint (JSON)
    ARGV[3] todos           the todo list (JSON)
    ARGV[4] usage           the usage so far (JSON)
    ARGV[5] channel         the run's events channel
    ARGV[6] maxlen          events kept (approximately)
    ARGV[7] runId
    ARGV[8] step            the step the checkpoint is at
    ARGV[9] profile         the profile of the model that answered the latest turn ('': none yet)
    ARGV[10] model          that model's name
    ARGV[11] taken          how many messages of the inbox, the oldest, the checkpoint took
    ARGV[12] turnCount      how many transcript entries (JSON each) of a session run's turn follow
    ARGV[13...] rest        turnCount entries (the whole turn, replacing the stored one), then
                            (type, data JSON) pairs of events

  Output:
    n >= 1 (saved; n - 1 messages wait in the inbox), 0 (another worker owns the run, or it is not
    running) or -1 (a cancel was requested, or the run has ended)
]]

--- @include "includes/lifecycle"
--- @include "includes/appendPairs"
--- @include "includes/replaceTurn"

local fields = redis.call('HMGET', KEYS[1], 'owner', 'status', 'cancelRequested')
local refused = refusedOwnerStep('save a checkpoint', fields[1], fields[2], fields[3], ARGV[1])
if refused then return refused end
local turnCount = tonumber(ARGV[12])
if turnCount > 0 then replaceTurn(KEYS[4], 13, turnCount) end
appendPairs(KEYS[3], ARGV[5], ARGV[6], ARGV[7], 13 + turnCount)
local taken = tonumber(ARGV[11])
if taken > 0 then redis.call('LTRIM', KEYS[5], taken, -1) end
redis.call('SET', KEYS[2], ARGV[2])
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[1], 'todos', ARGV[3], 'usage', ARGV[4], 'step', ARGV[8], 'profile', ARGV[9], 'model', ARGV[10])
else
  redis.call('HSET', KEYS[1], 'todos', ARGV[3], 'usage', ARGV[4], 'step', ARGV[8])
end
return 1 + redis.call('LLEN', KEYS[5])
