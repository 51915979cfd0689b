-- Release leases: for each job, only if this worker still owns its lease (a reaped and
-- re-claimed job belongs to its new owner), take it out of flight and then
--   ack:   forget it, unless the same id was scheduled again while it ran (that next
--          occurrence keeps its payload);
--   retry: make it due again at the given score with the given payload, unless a newer
--          schedule of the same id is already due (the newer one wins);
--   bury:  keep it in the dead-letter hash with the given record, in the same step.
-- Returns one 1 (released) or 0 (lease lost) per job.
--
-- KEYS: 1 in-flight jobs, 2 job payloads, 3 lease owners, 4 due jobs, 5 dead letters
-- ARGV: 1 action (ack | retry | bury), then per job: id, owner token, due score, value
--       (score and value unused by ack; value is the payload for retry, the record for bury)
local action = ARGV[1]
local out = {}
for i = 2, #ARGV, 4 do
  local job, token = ARGV[i], ARGV[i + 1]
  if redis.call('HGET', KEYS[3], job) ~= token then
    table.insert(out, 0)
  else
    redis.call('ZREM', KEYS[1], job)
    redis.call('HDEL', KEYS[3], job)
    local again = redis.call('ZSCORE', KEYS[4], job)
    if action == 'retry' then
      if not again then
        redis.call('ZADD', KEYS[4], ARGV[i + 2], job)
        redis.call('HSET', KEYS[2], job, ARGV[i + 3])
      end
    else
      if action == 'bury' then
        redis.call('HSET', KEYS[5], job, ARGV[i + 3])
      end
      if not again then
        redis.call('HDEL', KEYS[2], job)
      end
    end
    table.insert(out, 1)
  end
end
return out
