-- Store a new watch, add it to the questions it asks, and schedule a round for each
-- question nobody asked yet (one round job per question, whatever the number of watches).
--
-- KEYS: 1 watch hash, 2 all watches (zset), 3 the watcher's watches (zset),
--       4 live watches (set), 5 question documents (hash), 6 active questions (hash:
--       key -> its round job id), 7 due jobs, 8 job payloads, 9 wake-up list
-- Refused, storing nothing, when the watcher already has ARGV[7] watches watching
-- ({-1, how many}) or everyone has ARGV[8] ({-2, how many}): checked in the same step as
-- the store, so watches made at the same moment cannot pass the limit together.
-- ARGV: 1 id, 2 number (score), 3 doc, 4 watcher, 5 key prefix for question sets,
--       6 number of questions, 7 most watching per person, 8 most watching in all,
--       then per question: key, doc, job id, due, payload,
--       then the watch's end job: id, due, payload
local live_total = redis.call('SCARD', KEYS[4])
local mine = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  mine = mine + redis.call('SISMEMBER', KEYS[4], id)
end
if mine >= tonumber(ARGV[7]) then
  return {-1, mine}
end
if live_total >= tonumber(ARGV[8]) then
  return {-2, live_total}
end
redis.call('HSET', KEYS[1], 'doc', ARGV[3], 'state', 'watching', 'user', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
local n = tonumber(ARGV[6])
local scheduled = 0
local i = 9
for _ = 1, n do
  local key = ARGV[i]
  redis.call('SADD', ARGV[5] .. key, ARGV[1])
  redis.call('HSET', KEYS[5], key, ARGV[i + 1])
  if redis.call('HSETNX', KEYS[6], key, ARGV[i + 2]) == 1 then
    redis.call('ZADD', KEYS[7], ARGV[i + 3], ARGV[i + 2])
    redis.call('HSET', KEYS[8], ARGV[i + 2], ARGV[i + 4])
    scheduled = scheduled + 1
  end
  i = i + 5
end
redis.call('ZADD', KEYS[7], ARGV[i + 1], ARGV[i])
redis.call('HSET', KEYS[8], ARGV[i], ARGV[i + 2])
if scheduled > 0 then
  redis.call('LPUSH', KEYS[9], '1')
  redis.call('LTRIM', KEYS[9], 0, 15)
end
return {scheduled, mine + 1}
