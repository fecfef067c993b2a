--[[
  Gives a lease up, if the caller still holds it (a process stopping: another takes it at once,
  instead of when it expires).

  Input:
    KEYS[1] lease           the lease (string: its holder)

    ARGV[1] holder          who gives it up

  Output:
    1 when it was the caller's and is gone, 0 when another holds it (or nobody)
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
