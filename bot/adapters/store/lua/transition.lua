-- Compare-and-set one request, and in the same step write its audit entries, schedule or
-- cancel its jobs, and keep what the readers that must not read every record use: the
-- team-month money totals, the month's spend rows, the approvers' waiting list and the
-- team's closed reservations (see bot/domain/ledger.py, Projection). Succeeds only when
-- the stored version is the expected one, so of many concurrent writers exactly one wins.
--
-- The request's last projection is kept on its hash ('proj'), and the totals move by the
-- difference from it: whatever rules wrote the last one, the totals stay the sum of what
-- the records hold.
--
-- A budget guard (ARGV[16], cents) is the amount the team-month's held and paid may reach
-- with this write; past it nothing is written and {0, version, 'over-budget'} comes back,
-- so the approval is decided again on fresh totals.
--
-- A worker waiting for work is woken when any job is scheduled (as JobQueue.wake does), in
-- this same round trip.
--
-- KEYS: 1 request hash, 2 audit stream (all), 3 audit stream (this request),
--       4 old-state set, 5 new-state set, 6 requester index, 7 due jobs, 8 job payloads,
--       9 the workers' wake-up list, 10 the waiting list, 11 who may not act on each,
--       12 per user, how many waiting entries exclude them (so a page and a count are read
--       without walking the whole list: waiting_page.lua)
-- The month- and team-keyed keys are made here from the namespace prefix (ARGV[7]): they
-- share the namespace's hash tag, so they live in the same cluster slot.
-- ARGV: 1 id, 2 expected version (0 = must not exist), 3 new state, 4 document,
--       5 requester, 6 requester-index score, 7 key prefix, 8 projection
--       (team US month US held US paid US asked US measured, US = \31), 9 spend row ('' =
--       none), 10 row score, 11 waiting score ('' = not waiting), 12 waiting entry,
--       13 closed score ('' = not closed), 14 closed entry, 15 closed entries kept per
--       team, 16 budget guard ('' = none), 17 audit field count, then audit field/value
--       pairs, then the number of jobs to schedule and (job, due score, payload) triples,
--       then the number of jobs to cancel and their ids.
local id = ARGV[1]
local expected = tonumber(ARGV[2])
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if current ~= expected then
  return {0, current, redis.call('HGET', KEYS[1], 'state') or ''}
end
local prefix = ARGV[7]

local function split(text)
  local parts, from = {}, 1
  while true do
    local at = string.find(text, '\31', from, true)
    if not at then
      parts[#parts + 1] = string.sub(text, from)
      return parts
    end
    parts[#parts + 1] = string.sub(text, from, at - 1)
    from = at + 1
  end
end

local function projection(text)
  if not text then
    return nil
  end
  local p = split(text)
  return {team = p[1], month = p[2], held = tonumber(p[3]), paid = tonumber(p[4]),
          asked = tonumber(p[5]), measured = tonumber(p[6])}
end

local old = projection(redis.call('HGET', KEYS[1], 'proj'))
local new = projection(ARGV[8])
local function totals_key(month) return prefix .. ':money:' .. month end
local function same_bucket() return old and old.team == new.team and old.month == new.month end

if ARGV[16] ~= '' then
  local key = totals_key(new.month)
  local committed = tonumber(redis.call('HGET', key, new.team .. ':held') or '0')
                  + tonumber(redis.call('HGET', key, new.team .. ':paid') or '0')
  if same_bucket() then
    committed = committed - old.held - old.paid
  end
  if committed + new.held + new.paid > tonumber(ARGV[16]) then
    return {0, current, 'over-budget'}
  end
end

local version = expected + 1
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'version', version, 'doc', ARGV[4],
           'requester', ARGV[5], 'proj', ARGV[8])
redis.call('SREM', KEYS[4], id)
redis.call('SADD', KEYS[5], id)
redis.call('ZADD', KEYS[6], ARGV[6], id)

-- The team-month totals: out with the old projection, in with the new.
local function move(p, sign)
  local key = totals_key(p.month)
  for _, field in ipairs({'held', 'paid', 'asked', 'measured'}) do
    if p[field] ~= 0 then
      redis.call('HINCRBY', key, p.team .. ':' .. field, sign * p[field])
    end
  end
  if p.asked ~= 0 then
    redis.call('HINCRBY', key, p.team .. ':asked_n', sign)
  end
end
if old then
  move(old, -1)
  if not same_bucket() or ARGV[9] == '' then
    redis.call('ZREM', prefix .. ':rows:' .. old.month .. ':' .. old.team, id)
    redis.call('HDEL', prefix .. ':row:' .. old.month, id)
  end
end
move(new, 1)
if ARGV[9] ~= '' then
  redis.call('ZADD', prefix .. ':rows:' .. new.month .. ':' .. new.team, ARGV[10], id)
  redis.call('HSET', prefix .. ':row:' .. new.month, id, ARGV[9])
end

-- Each user a waiting entry excludes (its words after the kind), counted once.
local function count_excluded(entry, by)
  if not entry then return end
  local seen, first = {}, true
  for word in string.gmatch(entry, '%S+') do
    if first then
      first = false
    elseif not seen[word] then
      seen[word] = true
      if redis.call('HINCRBY', KEYS[12], word, by) <= 0 then
        redis.call('HDEL', KEYS[12], word)
      end
    end
  end
end
count_excluded(redis.call('HGET', KEYS[11], id), -1)
if ARGV[11] ~= '' then
  redis.call('ZADD', KEYS[10], ARGV[11], id)
  redis.call('HSET', KEYS[11], id, ARGV[12])
  count_excluded(ARGV[12], 1)
else
  redis.call('ZREM', KEYS[10], id)
  redis.call('HDEL', KEYS[11], id)
end

if ARGV[13] ~= '' then
  local closed = prefix .. ':closed:' .. new.team
  redis.call('ZADD', closed, ARGV[13], id)
  redis.call('HSET', closed .. ':use', id, ARGV[14])
  local over = redis.call('ZCARD', closed) - tonumber(ARGV[15])
  if over > 0 then
    local gone = redis.call('ZRANGE', closed, 0, over - 1)
    redis.call('ZREM', closed, unpack(gone))
    redis.call('HDEL', closed .. ':use', unpack(gone))
  end
end

local i = 17
local nfields = tonumber(ARGV[i])
local fields = {}
for j = 1, nfields * 2 do
  fields[j] = ARGV[i + j]
end
i = i + nfields * 2 + 1
if nfields > 0 then
  redis.call('XADD', KEYS[2], '*', unpack(fields))
  redis.call('XADD', KEYS[3], '*', unpack(fields))
end

local nschedule = tonumber(ARGV[i])
for _ = 1, nschedule do
  redis.call('ZADD', KEYS[7], ARGV[i + 2], ARGV[i + 1])
  redis.call('HSET', KEYS[8], ARGV[i + 1], ARGV[i + 3])
  i = i + 3
end
if nschedule > 0 then
  redis.call('LPUSH', KEYS[9], '1')
  redis.call('LTRIM', KEYS[9], 0, 15)
end
i = i + 1
local ncancel = tonumber(ARGV[i])
for _ = 1, ncancel do
  redis.call('ZREM', KEYS[7], ARGV[i + 1])
  redis.call('HDEL', KEYS[8], ARGV[i + 1])
  i = i + 1
end
return {1, version, ARGV[3]}
