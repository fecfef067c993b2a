--[[
  The first answer wins: the request is marked answered, the pending question dropped, the run
  queued again (when it sleeps on the question: one woken early keeps its status) and
  `clarify.answered` appended. The deadline is checked against Redis's clock.
  An answer with a webhook's answer token (its SHA-256 given) needs that token recorded for this
  question and not used yet; the answer marks it used. The token is checked first, before anything
  that would tell whether the run or the question exists: a token that is not recorded for this
  question is 'bad_token' whatever exists, after the same one HGET.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] clarify         the clarify request (hash)
    KEYS[3] events          the run's event log (stream)
    KEYS[4] pending         the question the run waits on (string)

    ARGV[1] channel         the run's events channel
    ARGV[2] maxlen          events kept (approximately)
    ARGV[3] runId
    ARGV[4] requestId
    ARGV[5] answer
    ARGV[6] tokenHash       the SHA-256 (hex) of the answer token used, '' for an API key or session token

  Output:
    'ok', or why not: 'bad_token' (the token is not one of this question's, or the run or the
    question does not exist), 'token_used' (the token answered already), 'no_run', 'no_request',
    'answered' or 'timed_out' (the request's fate), 'ended' (the run has ended), 'expired' (past
    the deadline)
]]

--- @include "includes/lifecycle"
--- @include "includes/nowMs"
--- @include "includes/append"

if ARGV[6] ~= '' then
  local token = redis.call('HGET', KEYS[2], 't:' .. ARGV[6])
  if not token then return 'bad_token' end
  if token == 'used' then return 'token_used' end
end
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'no_run' end
local request = redis.call('HMGET', KEYS[2], 'status', 'expiresAt')
if not request[1] then return 'no_request' end
if request[1] ~= 'pending' then return request[1] end
-- A run asleep on its question is queued for its next attempt; one woken early (or handed back)
-- keeps its status, and its attempt finds the answer before it sleeps again.
local step = status == 'waiting_for_input' and 'answer' or 'answer while awake'
if not allowed(step, status) then return 'ended' end
if nowMs() >= tonumber(request[2]) then return 'expired' end
redis.call('HSET', KEYS[2], 'status', 'answered', 'answer', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[2], 't:' .. ARGV[6], 'used') end
redis.call('DEL', KEYS[4])
if step == 'answer' then redis.call('HSET', KEYS[1], 'status', 'queued') end
append(KEYS[3], ARGV[1], ARGV[2], ARGV[3], 'clarify.answered', cjson.encode({ requestId = ARGV[4], answer = ARGV[5] }))
return 'ok'
