-- Claim due jobs with a lease, in one step: first return expired leases to the due set
-- (their worker died), then move up to ARGV[3] due jobs to the in-flight set with a
-- deadline and an owner token. A job id that is in flight is not claimed again until
-- its owner is done (one occurrence of a job runs at a time): it stays due and is
-- stepped over. The scan goes on page by page until enough jobs are claimed or no due
-- job is left, so however many in-flight ids sit at the head, a due job behind them is
-- found (the stepped-over ones are at most the in-flight ones). Delivery is
-- at-least-once; handlers are idempotent.
--
-- KEYS: 1 due jobs, 2 in-flight jobs, 3 job payloads, 4 lease owners
-- ARGV: 1 now, 2 lease deadline, 3 max jobs, 4 owner token
local now = ARGV[1]
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, job in ipairs(expired) do
  redis.call('ZREM', KEYS[2], job)
  redis.call('HDEL', KEYS[4], job)
  if redis.call('HEXISTS', KEYS[3], job) == 1 and not redis.call('ZSCORE', KEYS[1], job) then
    redis.call('ZADD', KEYS[1], now, job)
  end
end
local wanted = tonumber(ARGV[3])
local page = math.max(wanted, 64)
local out = {}
local claimed = 0
local skipped = 0
while claimed < wanted do
  -- Claimed jobs leave the due set; skipped ones stay, so the next page starts after them.
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', skipped, page)
  if #due == 0 then
    break
  end
  for _, job in ipairs(due) do
    if claimed >= wanted then
      break
    end
    if redis.call('ZSCORE', KEYS[2], job) then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[1], job)
      local payload = redis.call('HGET', KEYS[3], job)
      if payload then
        redis.call('ZADD', KEYS[2], ARGV[2], job)
        redis.call('HSET', KEYS[4], job, ARGV[4])
        table.insert(out, job)
        table.insert(out, payload)
        claimed = claimed + 1
      end
    end
  end
end
return out
