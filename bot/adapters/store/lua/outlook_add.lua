-- One search's counts on its shape-day hash, in one call: add each counter (HINCRBY),
-- keep the lower of each low (the earliest lead seen), and expire the hash when it leaves
-- the window.
-- KEYS[1] the shape-day hash
-- ARGV[1] expire at (unix seconds), ARGV[2] how many counters follow as name, by pairs;
-- after them, name, value pairs of lows.
local key = KEYS[1]
local adds = tonumber(ARGV[2])
local i = 3
for _ = 1, adds do
  redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i <= #ARGV do
  local now = redis.call('HGET', key, ARGV[i])
  if not now or tonumber(ARGV[i + 1]) < tonumber(now) then
    redis.call('HSET', key, ARGV[i], ARGV[i + 1])
  end
  i = i + 2
end
redis.call('EXPIREAT', key, ARGV[1])
return 1
