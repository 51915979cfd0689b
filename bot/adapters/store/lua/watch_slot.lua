-- A watch round's turn to ask AWS: at most ARGV[3] searches in any one window (a minute),
-- handed out first come, first served. A round with a turn in the current window (or an
-- earlier one it missed) asks now; one with a turn ahead waits for it; one without takes
-- the next place in the queue: the last window handed out while it has room, else the
-- one after (never a window already past). So n rounds due at once are all asked within
-- ceil(n / per window) windows, none twice before every other had its turn. No loop:
-- the queue's tail is one window and its count.
-- KEYS: 1 turns (hash: round job id -> window), 2 the tail (hash: window, used)
-- ARGV: 1 round job id, 2 current window (integer), 3 searches per window
-- Returns the window of the turn: the current one (or earlier) means ask now.
local now = tonumber(ARGV[2])
local held = redis.call('HGET', KEYS[1], ARGV[1])
if held then
  local window = tonumber(held)
  if window <= now then
    redis.call('HDEL', KEYS[1], ARGV[1])
  end
  return window
end
local per = tonumber(ARGV[3])
local tail = redis.call('HMGET', KEYS[2], 'window', 'used')
local window = tonumber(tail[1] or '0')
local used = tonumber(tail[2] or '0')
if window < now then
  window, used = now, 0
end
if used >= per then
  window, used = window + 1, 0
end
redis.call('HSET', KEYS[2], 'window', window, 'used', used + 1)
if window > now then
  redis.call('HSET', KEYS[1], ARGV[1], window)
end
return window
