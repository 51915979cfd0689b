-- Schedule the jobs handed in while answering Slack, each at most once per delivery,
-- and wake a worker: one round trip for a whole batch.
--
-- A job with a once-key is dropped when that key was set in the last ARGV[1] seconds
-- (a replayed Slack request). Once-keys are named here from ARGV[2], a prefix carrying
-- the namespace's hash tag, so they live in the same cluster slot as KEYS.
--
-- KEYS: 1 due jobs, 2 job payloads, 3 the workers' wake-up list
-- ARGV: 1 seconds to remember a once-key, 2 the once-keys' prefix, then
--       (once-key or '', job id, due score, payload) quadruples
local remember = tonumber(ARGV[1])
local scheduled = 0
for i = 3, #ARGV, 4 do
  local once = ARGV[i]
  if once == '' or redis.call('SET', ARGV[2] .. once, '1', 'NX', 'EX', remember) then
    redis.call('ZADD', KEYS[1], ARGV[i + 2], ARGV[i + 1])
    redis.call('HSET', KEYS[2], ARGV[i + 1], ARGV[i + 3])
    scheduled = scheduled + 1
  end
end
if scheduled > 0 then
  redis.call('LPUSH', KEYS[3], '1')
  redis.call('LTRIM', KEYS[3], 0, 15)
end
return scheduled
