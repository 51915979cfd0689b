-- A page of what waits for one approver, and how many do, read inside Redis: the waiting
-- list can hold thousands of entries, and the caller needs only `limit` ids and a count
-- (reading them all into the serving process grew its time and memory with the list).
-- Read-only.
--
-- KEYS: 1 the waiting list (ids scored by request number), 2 who may not act on each
--       (its kind, then the user ids excluded, space separated)
-- ARGV: 1 the approver, 2 offset, 3 limit ('' = every one)
local user = ARGV[1]
local offset = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local total, page = 0, {}
local size, chunk, from = redis.call('ZCARD', KEYS[1]), 500, 0
while from < size do
  local ids = redis.call('ZRANGE', KEYS[1], from, from + chunk - 1)
  local who = redis.call('HMGET', KEYS[2], unpack(ids))
  for i, id in ipairs(ids) do
    local excluded, first = false, true
    for word in string.gmatch(who[i] or '', '%S+') do
      if first then
        first = false -- the kind
      elseif word == user then
        excluded = true
        break
      end
    end
    if not excluded then
      if total >= offset and (limit == nil or #page < limit) then
        page[#page + 1] = id
      end
      total = total + 1
    end
  end
  from = from + chunk
end
return {total, page}
