-- Give a failed job back for a later attempt, only if this worker owns its lease: it
-- leaves the in-flight set and is due again at ARGV[3] with the payload ARGV[4] (which
-- counts the attempts). A newer schedule of the same job id wins over the retry.
--
-- KEYS: 1 in-flight jobs, 2 job payloads, 3 lease owners, 4 due jobs
-- ARGV: 1 job, 2 owner token, 3 due score, 4 payload
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if not redis.call('ZSCORE', KEYS[4], ARGV[1]) then
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
end
return 1
