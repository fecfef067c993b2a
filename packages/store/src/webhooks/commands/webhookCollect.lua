--[[
  Reads what a run's webhook deliveries need from its slot: the run's tenant, status, session and
  metadata, and the events of the given types logged after the run's dispatch hint (or after
  `after`, when that is later), at most `scan` entries of the log. When a token hash is given, it
  is recorded for each `clarify.requested` question or `approval.requested` call read that the
  run's waitpoint holds (see includes/tokenField), so the token answers that question or decides
  that call; only the hash is kept.

  Input:
    KEYS[1] record          the run record (hash)
    KEYS[2] events          the run's event log (stream)
    KEYS[3] metadata        the caller's metadata (string)
    KEYS[4] webhookHint     the run's dispatch hint (string: an event id)
    KEYS[5] waitpoint       the run's waitpoint (hash)

    ARGV[1] types           the event types to return, each between spaces (' run.completed ')
    ARGV[2] after           read after this event id when it is later than the hint ('' for the hint)
    ARGV[3] scan            log entries read at most
    ARGV[4] tokenHash       the SHA-256 (hex) of an answer token, '' for none

  Output:
    false (the run is missing) or { tenant, status, session, metadata, last id read ('' for none),
    how many entries were read, then (id, type, data JSON) per event of those types }
]]

--- @include "includes/streamIdAfter"
--- @include "includes/tokenField"

local fields = redis.call('HMGET', KEYS[1], 'tenant', 'status', 'session')
if not fields[1] then return false end
local start = redis.call('GET', KEYS[4]) or '0'
if ARGV[2] ~= '' and streamIdAfter(ARGV[2], start) then start = ARGV[2] end
local range = '-'
if start ~= '0' then range = '(' .. start end
local scan = tonumber(ARGV[3])
local entries = redis.call('XRANGE', KEYS[2], range, '+', 'COUNT', scan)
local reply = { fields[1], fields[2], fields[3] or '', redis.call('GET', KEYS[3]) or '', '', 0 }
for _, entry in ipairs(entries) do
  local etype, data
  local kv = entry[2]
  for i = 1, #kv, 2 do
    if kv[i] == 't' then etype = kv[i + 1] elseif kv[i] == 'd' then data = kv[i + 1] end
  end
  if etype and string.find(ARGV[1], ' ' .. etype .. ' ', 1, true) then
    if (etype == 'clarify.requested' or etype == 'approval.requested') and ARGV[4] ~= '' then
      local ok, decoded = pcall(cjson.decode, data)
      local request = ok and type(decoded) == 'table' and decoded.requestId
      if type(request) == 'string' and redis.call('HEXISTS', KEYS[5], 's:' .. request) == 1 then
        redis.call('HSET', KEYS[5], tokenField(request, ARGV[4]), 'ok')
      end
    end
    reply[#reply + 1] = entry[1]
    reply[#reply + 1] = etype
    reply[#reply + 1] = data or '{}'
  end
end
if #entries > 0 then reply[5] = entries[#entries][1] end
reply[6] = #entries
return reply
