-- Finish a claimed job, only if this worker still owns its lease (a reaped and
-- re-claimed job belongs to its new owner). If the same job id was scheduled again
-- while it ran, its new payload stays for that next run.
--
-- KEYS: 1 in-flight jobs, 2 job payloads, 3 lease owners, 4 due jobs
-- ARGV: 1 job, 2 owner token
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if not redis.call('ZSCORE', KEYS[4], ARGV[1]) then
  redis.call('HDEL', KEYS[2], ARGV[1])
end
return 1
