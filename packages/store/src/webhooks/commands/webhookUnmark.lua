--[[
  Takes a run off the tenant's dirty set, unless it was marked again since (its score changed).

  Input:
    KEYS[1] dirty           the runs an API step was about to append events to (sorted set)

    ARGV[1] runId
    ARGV[2] score           the mark this caller made or read

  Output:
    1 when removed, else 0
]]

if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
