--[[
  Takes a lease that nobody holds (SET NX PX), or renews it for the one who holds it: one
  process at a time does a job that every process could (the queue's counts for the metrics).

  Input:
    KEYS[1] lease           the lease (string: its holder)

    ARGV[1] holder          who asks (a process's id)
    ARGV[2] ttlMs           how long the lease lasts from now unless renewed

  Output:
    1 when the caller holds the lease now (taken or renewed), 0 when another does
]]

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
