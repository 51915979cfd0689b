-- A question's round found no live watch asking it: the question is retired (its round
-- job then ends), unless a watch joined meanwhile. Returns 1 when retired.
--
-- KEYS: 1 the question's watch set, 2 active questions (hash), 3 question documents,
--       4 search turns (watch_slot.lua: a turn held by the ending round is given up)
-- ARGV: 1 question key, 2 the round job id that asks
if redis.call('SCARD', KEYS[1]) > 0 then
  return 0
end
if redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
end
redis.call('HDEL', KEYS[4], ARGV[2])
return 1
