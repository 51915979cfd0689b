-- Reserve the next posting slot in one channel: Slack allows about one message a second
-- per channel. Returns 0 and moves the slot on when posting now is allowed, else the
-- milliseconds to wait (nothing reserved). The key expires once the slot has passed.
--
-- KEYS: 1 the channel's next free slot (epoch ms)
-- ARGV: 1 now (epoch ms), 2 interval (ms)
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if free > now then
  return free - now
end
redis.call('SET', KEYS[1], now + interval, 'PX', math.max(interval * 2, 60000))
return 0
