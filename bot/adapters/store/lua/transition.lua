-- Compare-and-set one request, and in the same step write its audit entries and
-- schedule or cancel its jobs. Succeeds only when the stored version is the expected
-- one, so of many concurrent writers exactly one wins.
--
-- A worker waiting for work is woken when any job is scheduled (as JobQueue.wake does), in
-- this same round trip.
--
-- KEYS: 1 request hash, 2 audit stream (all), 3 audit stream (this request),
--       4 old-state set, 5 new-state set, 6 requester index, 7 due jobs, 8 job payloads,
--       9 the workers' wake-up list
-- ARGV: 1 id, 2 expected version (0 = must not exist), 3 new state, 4 document,
--       5 requester, 6 created score, 7 audit field count, then audit field/value pairs,
--       then the number of jobs to schedule and (job, due score, payload) triples,
--       then the number of jobs to cancel and their ids.
local id = ARGV[1]
local expected = tonumber(ARGV[2])
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if current ~= expected then
  return {0, current, redis.call('HGET', KEYS[1], 'state') or ''}
end
local version = expected + 1
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'version', version, 'doc', ARGV[4],
           'requester', ARGV[5])
redis.call('SREM', KEYS[4], id)
redis.call('SADD', KEYS[5], id)
redis.call('ZADD', KEYS[6], ARGV[6], id)

local i = 7
local nfields = tonumber(ARGV[i])
local fields = {}
for j = 1, nfields * 2 do
  fields[j] = ARGV[i + j]
end
i = i + nfields * 2 + 1
if nfields > 0 then
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  redis.call('XADD', KEYS[3], '*', unpack(fields))
end

local nschedule = tonumber(ARGV[i])
for _ = 1, nschedule do
  redis.call('ZADD', KEYS[7], ARGV[i + 2], ARGV[i + 1])
  redis.call('HSET', KEYS[8], ARGV[i + 1], ARGV[i + 3])
  i = i + 3
end
if nschedule > 0 then
  redis.call('LPUSH', KEYS[9], '1')
  redis.call('LTRIM', KEYS[9], 0, 15)
end
i = i + 1
local ncancel = tonumber(ARGV[i])
for _ = 1, ncancel do
  redis.call('ZREM', KEYS[7], ARGV[i + 1])
  redis.call('HDEL', KEYS[8], ARGV[i + 1])
  i = i + 1
end
return {1, version, ARGV[3]}
