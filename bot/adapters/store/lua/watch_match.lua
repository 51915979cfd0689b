-- Record a match of a watch and schedule its message, in one step, only when it is new
-- and better than the last one sent: of any number of workers asking at once, one
-- records it; the same offering is never recorded twice.
--
-- KEYS: 1 watch hash, 2 sent offering ids (set), 3 sent matches (list), 4 due jobs,
--       5 job payloads, 6 the workers' wake-up list, 7 audit stream (all),
--       8 audit stream (this watch)
-- ARGV: 1 offering id, 2 the match as JSON, 3 its start (epoch), 4 its fee,
--       5 margin (0.05: at least 5% cheaper), 6 job id, 7 job due (epoch), 8 job payload,
--       9 audit field count, then audit field/value pairs
if redis.call('HGET', KEYS[1], 'state') ~= 'watching' then
  return 0
end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local start = tonumber(ARGV[3])
local fee = tonumber(ARGV[4])
local last_start = redis.call('HGET', KEYS[1], 'last_start')
if last_start then
  local last_fee = tonumber(redis.call('HGET', KEYS[1], 'last_fee'))
  local margin = tonumber(ARGV[5])
  if not (start < tonumber(last_start) or fee <= last_fee * (1 - margin) + 1e-9) then
    return 0
  end
end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[2])
redis.call('HSET', KEYS[1], 'last_start', ARGV[3], 'last_fee', ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[7], ARGV[6])
redis.call('HSET', KEYS[5], ARGV[6], ARGV[8])
redis.call('LPUSH', KEYS[6], '1')
redis.call('LTRIM', KEYS[6], 0, 15)
local n = tonumber(ARGV[9])
if n > 0 then
  local fields = {}
  for j = 1, n * 2 do
    fields[j] = ARGV[9 + j]
  end
  redis.call('XADD', KEYS[7], '*', unpack(fields))
  redis.call('XADD', KEYS[8], '*', unpack(fields))
end
return 1
