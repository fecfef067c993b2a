--[[
  Whether stream id `a` (`<ms>-<seq>`) comes after stream id `b`; '0' comes before every id.
]]
local function streamIdAfter(a, b)
  local ams, aseq = string.match(a, '^(%d+)-?(%d*)$')
  local bms, bseq = string.match(b, '^(%d+)-?(%d*)$')
  ams, bms = tonumber(ams), tonumber(bms)
  if ams ~= bms then return ams > bms end
  return (tonumber(aseq) or 0) > (tonumber(bseq) or 0)
end
