-- A page of what waits for one approver, and how many do, read inside Redis: the caller
-- gets `limit` ids and a count, not the whole list. Once the per-user exclusion counts
-- are built (KEYS[4] set by waiting_recount.lua; transition.lua keeps them after), the
-- count is the list's size less the user's exclusions, and the walk stops when the page
-- is full; before, the whole list is walked. Read-only.
--
-- KEYS: 1 the waiting list (ids scored by request number), 2 who may not act on each
--       (its kind, then the user ids excluded, space separated), 3 per user, how many
--       entries exclude them, 4 the marker that those counts are complete
-- ARGV: 1 the approver, 2 offset, 3 limit ('' = every one)
local user = ARGV[1]
local offset = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local size = redis.call('ZCARD', KEYS[1])
local counted = redis.call('EXISTS', KEYS[4]) == 1 and limit ~= nil
local total, page, seen = 0, {}, 0
-- A walk that can stop early reads little more than the page first, then doubles.
local chunk, from = 500, 0
if counted then chunk = math.min(500, 2 * (offset + limit) + 8) end

local function excludes(entry)
  local first = true
  for word in string.gmatch(entry or '', '%S+') do
    if first then
      first = false -- the kind
    elseif word == user then
      return true
    end
  end
  return false
end

while from < size do
  if counted and #page >= limit then break end
  local ids = redis.call('ZRANGE', KEYS[1], from, from + chunk - 1)
  local who = redis.call('HMGET', KEYS[2], unpack(ids))
  for i, id in ipairs(ids) do
    if not excludes(who[i]) then
      if seen >= offset and (limit == nil or #page < limit) then
        page[#page + 1] = id
      end
      seen = seen + 1
    end
  end
  from = from + chunk
  chunk = math.min(500, 2 * chunk)
end
if counted then
  total = size - tonumber(redis.call('HGET', KEYS[3], user) or '0')
else
  total = seen
end
return {total, page}
