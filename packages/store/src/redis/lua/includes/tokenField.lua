--[[
  The waitpoint's field of an answer token for one request: the request id and the first 96 bits
  (24 hex digits) of the token's SHA-256, short enough for Redis to keep the hash compact (values
  and field names of at most 64 bytes). Finding a token whose hash starts so is as hard as guessing
  96 random bits.
]]
local function tokenField(requestId, tokenHash)
  return 't:' .. requestId .. ':' .. string.sub(tokenHash, 1, 24)
end
