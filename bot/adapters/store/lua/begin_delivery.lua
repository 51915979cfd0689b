-- Before posting a message with a delivery key, in one step: what is known of the key,
-- then the channel's pace, then mark the key pending (recorded before the Slack call).
-- Returns {'sent', doc} or {'pending', doc} when the key is known (unless ARGV[7] says
-- the conversation was looked at already), {'wait', ms} when the channel's next slot is
-- later (nothing reserved), or {'go', ''} with the slot reserved and the key pending.
--
-- KEYS: 1 the delivery key, 2 the channel's next free slot (epoch ms)
-- ARGV: 1 now (epoch ms), 2 pace interval (ms), 3 channel, 4 now (ISO), 5 key TTL (s),
--       6 unused, 7 '1' when an uncertain earlier post was looked for and not found
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local raw = redis.call('GET', KEYS[1])
if raw and ARGV[7] ~= '1' then
  local state = cjson.decode(raw)['state']
  if state == 'sent' or state == 'pending' then
    return {state, raw}
  end
end
local free = tonumber(redis.call('GET', KEYS[2]) or '0')
if free > now then
  return {'wait', tostring(free - now)}
end
redis.call('SET', KEYS[2], now + interval, 'PX', math.max(interval * 2, 60000))
local doc = cjson.encode({state = 'pending', channel = ARGV[3], at = ARGV[4]})
redis.call('SET', KEYS[1], doc, 'EX', tonumber(ARGV[5]))
return {'go', ''}
