-- Extend the leases of jobs still running (a heartbeat), only where this worker still
-- owns the lease; a lease already lost stays lost. Returns how many were extended.
--
-- KEYS: 1 in-flight jobs, 2 lease owners
-- ARGV: 1 new deadline, then per job: id, owner token
local n = 0
for i = 2, #ARGV, 2 do
  if redis.call('HGET', KEYS[2], ARGV[i]) == ARGV[i + 1] then
    redis.call('ZADD', KEYS[1], 'XX', ARGV[1], ARGV[i])
    n = n + 1
  end
end
return n
