-- Build the per-user exclusion counts of the waiting list from scratch (once, for lists
-- written before transition.lua kept them), then mark them complete. Atomic: no write
-- lands between the count and the marker.
--
-- KEYS: 1 who may not act on each waiting entry, 2 per user, how many entries exclude
--       them, 3 the marker that those counts are complete
redis.call('DEL', KEYS[2])
local entries = redis.call('HVALS', KEYS[1])
for _, entry in ipairs(entries) do
  local seen, first = {}, true
  for word in string.gmatch(entry, '%S+') do
    if first then
      first = false
    elseif not seen[word] then
      seen[word] = true
      redis.call('HINCRBY', KEYS[2], word, 1)
    end
  end
end
redis.call('SET', KEYS[3], '1')
return #entries
