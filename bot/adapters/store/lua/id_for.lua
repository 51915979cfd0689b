-- The request id given to a key: a new one from the counter the first time, the same
-- one after (a job that creates a request and runs again reuses its id).
--
-- KEYS: 1 the key's id, 2 the request id counter
-- ARGV: 1 seconds to remember the key
local id = redis.call('GET', KEYS[1])
if id then
  return id
end
id = 'R' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], id, 'EX', tonumber(ARGV[1]))
return id
