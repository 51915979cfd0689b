-- End or stop a watch that is watching, and take it out of the questions it asks.
-- KEYS: 1 watch hash, 2 live watches (set), then the sets of its questions
-- ARGV: 1 new state, 2 note, 3 watch id
if redis.call('HGET', KEYS[1], 'state') ~= 'watching' then
  return 0
end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'note', ARGV[2])
redis.call('SREM', KEYS[2], ARGV[3])
for i = 3, #KEYS do
  redis.call('SREM', KEYS[i], ARGV[3])
end
return 1
