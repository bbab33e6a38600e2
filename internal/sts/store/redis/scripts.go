package redis

import (
	"strconv"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The Lua scripts that make every change to a list one atomic step in Redis, whichever server
// runs it. Each touches only the keys of one list, all in the list's hash slot (keys.go), so they
// run on Redis Cluster too. A script checks the list key's type before it writes anything: Redis
// does not undo a script's earlier writes when a later command fails, so a key of the wrong type
// (someone SET a string where a list lives) must stop it first.
//
// KEYS are a list's keys (keys.go): KEYS[1] the list, KEYS[2] its meta hash (field "created" marks
// that the list exists, since Redis deletes an empty LIST key; "digest" is store.ListInfo.Digest;
// "indexed" says the unique index KEYS[3] is kept; "leased", "returned" and "deadLettered" are
// the lease counters of store.ListInfo; "due" and "deadClaim" are the lease scripts'), KEYS[3]
// the unique index (line -> count), KEYS[4] to KEYS[8] the leases' keys (lease scripts, below),
// KEYS[9] the key of the outcome of the client's store.Request, KEYS[10] when present a staging
// list that a bulk change was uploaded into.
//
// Requests (store/request.go). ARGV[1] is the request's window in ms ("" for a change made under
// no request) and ARGV[2] its fingerprint. The prelude takes KEYS[9], ARGV[1] and ARGV[2] off the
// tables, so that each script's own keys and arguments start at KEYS[9] and ARGV[1], and answers
// the outcome recorded for the request, if any, before the script does anything: the script's
// own reply, as it was (recall). A script that makes its change replies through done, which
// records that reply under the request in the same step. A failure that changes nothing is not
// recorded.
//
// Replies are arrays whose first element is a status: 0 done, then the script's own codes. A
// script that creates a list replies a second element, 1 while the list's name is not in the
// registry yet (the server adds it there, then sets the meta hash's "registered").
// The last ARGV of a script that creates a list is "1" when the server last saw the registry at
// --max-lists: the script then replies {4, 0} instead of creating a list that does not exist yet
// (the registry is in another slot, so the script cannot count it itself).

// recall answers the outcome recorded under request (a key), for a request whose window is not
// "", with fingerprint: the reply recorded, or an STSREUSED error for another fingerprint.
const recall = `
if window ~= '' then
  local kept = redis.call('GET', request)
  if kept then
    local was, reply = cmsgpack.unpack(kept)
    if was ~= fingerprint then
      return redis.error_reply('STSREUSED the request id was sent before with another request')
    end
    return reply
  end
end
`

// scriptRecall is the outcome recorded for a request, if any: KEYS[1] its key, ARGV[1] its window,
// ARGV[2] its fingerprint. Replies the recorded reply, or {} when there is none.
const scriptRecall = `local request, window, fingerprint = KEYS[1], ARGV[1], ARGV[2]
` + recall + `
return {}
`

// prelude is shared by every script of a list.
const prelude = `
local request, window, fingerprint = table.remove(KEYS, 9), table.remove(ARGV, 1), table.remove(ARGV, 1)
` + recall + `
local list, meta, counts, leases, expires, returns, ended, dead, staging = unpack(KEYS)

-- done records reply as the outcome of the request, if any, and returns it.
local function done(reply)
  if window ~= '' then redis.call('SET', request, cmsgpack.pack(fingerprint, reply), 'PX', window) end
  return reply
end

-- wrongType checks the list, its meta hash and its unique index, and the other keys the script
-- may write: each of its type, or none yet.
local function wrongType(...)
  local types = {[list] = 'list', [meta] = 'hash', [counts] = 'hash', [leases] = 'hash',
    [expires] = 'zset', [returns] = 'hash', [ended] = 'zset', [dead] = 'list'}
  if staging then types[staging] = 'list' end
  for _, key in ipairs({list, meta, counts, ...}) do
    local t, want = redis.call('TYPE', key)['ok'], types[key]
    if t ~= want and t ~= 'none' then
      return redis.error_reply('WRONGTYPE the key ' .. key .. ' holds a ' .. t .. ', not a ' .. want .. ': sts changes nothing in it')
    end
  end
  return nil
end

-- create marks the list as existing, and says whether no server has registered its name yet
-- (in the registry, a key of another slot, which the server then writes).
local function create()
  redis.call('HSETNX', meta, 'created', '1')
  if redis.call('HEXISTS', meta, 'registered') == 1 then return 0 end
  return 1
end

local function exists()
  return redis.call('EXISTS', meta) == 1
end

-- noRoom says the list does not exist and the server found no room for one more list.
local function noRoom()
  return ARGV[#ARGV] == '1' and not exists()
end

local function indexed()
  return redis.call('HEXISTS', meta, 'indexed') == 1
end

-- lent is how many lines the list lent (under leases, or on their way to the dead letters): they
-- may come back at any time, so its line limit counts them.
local function lent()
  return tonumber(redis.call('HGET', meta, 'leased')) or 0
end

-- unstaged is the reply {code, second} of a bulk change that is not made: its staged lines go.
local function unstaged(code, second)
  redis.call('DEL', staging)
  return {code, second or 0}
end

-- unindex takes removed lines out of the unique index, or drops the index with the last line
-- the list holds.
local function unindex(lines)
  if not indexed() then return end
  if redis.call('LLEN', list) == 0 and redis.call('HLEN', leases) == 0 and redis.call('LLEN', dead) == 0 then
    redis.call('DEL', counts)
    redis.call('HDEL', meta, 'indexed')
    return
  end
  for _, l in ipairs(lines) do
    if redis.call('HINCRBY', counts, l, -1) <= 0 then redis.call('HDEL', counts, l) end
  end
end

local function reindex(lines)
  if not indexed() then return end
  for _, l in ipairs(lines) do redis.call('HINCRBY', counts, l, 1) end
end

-- push adds lines in chunks (unpack is bounded by Lua's C stack): RPUSH appends them in order,
-- LPUSH puts them at the front in reverse order.
local function push(cmd, key, lines)
  for i = 1, #lines, 1000 do
    redis.call(cmd, key, unpack(lines, i, math.min(i + 999, #lines)))
  end
end

-- consumed forgets lines taken for good: the unique index no longer counts them, and their
-- returns (lease scripts) are forgotten, so that a line added again later starts its count afresh.
local function consumed(lines)
  unindex(lines)
  if redis.call('EXISTS', returns) == 0 then return end
  for i = 1, #lines, 1000 do
    redis.call('HDEL', returns, unpack(lines, i, math.min(i + 999, #lines)))
  end
end

-- pick removes n lines one after the other at pos (F, L, or R with the fractions ARGV[from] to
-- ARGV[from + n - 1]) and returns them; or nil, then 1 (not loaded), 2 (empty) or 3 and the
-- list's length (too short).
local function pick(pos, n, tomb, from)
  if not exists() then return nil, 1 end
  local size = redis.call('LLEN', list)
  if size == 0 then return nil, 2 end
  if n > size then return nil, 3, size end
  if pos == 'F' then return redis.call('LPOP', list, n) end
  if pos == 'L' then return redis.call('RPOP', list, n) end
  local picked = {}
  for i = 1, n do
    local len = size - i + 1
    local idx = math.floor(tonumber(ARGV[from + i - 1]) * len)
    if idx >= len then idx = len - 1 end
    if idx == 0 then
      picked[i] = redis.call('LPOP', list)
    elseif idx == len - 1 then
      picked[i] = redis.call('RPOP', list)
    else
      picked[i] = redis.call('LINDEX', list, idx)
      redis.call('LSET', list, idx, tomb)
      if idx < len / 2 then redis.call('LREM', list, 1, tomb) else redis.call('LREM', list, -1, tomb) end
    end
  end
  return picked
end

-- remove takes out the line that FIND's scan chose, if it is still among the first within lines
-- (lines come and go at the ends, so it can only have moved by what was added at the front), and
-- says whether it did. Otherwise another server took it, or moved it to the end with KEEP: the
-- scan goes on to its next hit, instead of LREM walking the whole list to the moved copy.
local function remove(line, within)
  if not redis.call('LPOS', list, line, 'MAXLEN', within) then return false end
  redis.call('LREM', list, 1, line)
  return true
end

local function notify(channel, name)
  redis.call('PUBLISH', channel, name)
end
`

// scriptRead is READ and READMULTI. ARGV: position (F, L or R), n, keep (1/0), the tombstone,
// then for R n fractions in [0, 1) that pick the indexes (chosen by the server in Go, since a
// script's own random numbers are the same on every call). Replies {0, lines}, {1} not loaded,
// {2} empty, {3, size} too short.
//
// A RANDOM removal keeps the order of the rest, as the memory backend does: the picked line is
// overwritten with the tombstone, which LREM then removes from the nearer end, so it costs the
// distance to that end (compared in C, a few ns a line) rather than a copy of the list.
const scriptRead = prelude + `
local err = wrongType(returns, leases, dead)
if err then return err end
local picked, status, size = pick(ARGV[1], tonumber(ARGV[2]), ARGV[4], 5)
if not picked then return {status, size} end
if ARGV[3] == '1' then push('RPUSH', list, picked) else consumed(picked) end
return done({0, picked})
`

// scriptPage is a page of FIND's scan. ARGV: start, stop. Replies {0, lines} or {1} not loaded.
const scriptPage = prelude + `
if not exists() then return {1} end
return {0, redis.call('LRANGE', list, tonumber(ARGV[1]), tonumber(ARGV[2]))}
`

// scriptTake removes a line that FIND's scan chose (remove). ARGV: line, keep (1/0), how far from
// the front to look. Replies {0, line} taken (a recalled outcome's line may be another than the
// one this scan chose), {1} gone.
const scriptTake = prelude + `
local err = wrongType(returns, leases, dead)
if err then return err end
local line = ARGV[1]
if not remove(line, tonumber(ARGV[3])) then return {1} end
if ARGV[2] == '1' then redis.call('RPUSH', list, line) else consumed({line}) end
return done({0, line})
`

// scriptAdd is ADD. ARGV: line, position (F or L), unique (1/0), the most lines a list may hold
// (0 for no limit), the notification channel, the list's name, full. Replies {0, unregistered},
// {1, unregistered} duplicate, {2, unregistered} list full, {4, 0} no room for a new list.
const scriptAdd = prelude + `
local err = wrongType(leases, dead)
if err then return err end
if noRoom() then return {4, 0} end
local line = ARGV[1]
local created = create()
if ARGV[3] == '1' then
  if not indexed() then
    -- Lent lines count too: they may come back.
    local all = redis.call('LRANGE', list, 0, -1)
    for _, p in ipairs(redis.call('HVALS', leases)) do
      local _, lines = cmsgpack.unpack(p)
      for _, l in ipairs(lines) do all[#all + 1] = l end
    end
    for _, l in ipairs(redis.call('LRANGE', dead, 0, -1)) do all[#all + 1] = l end
    for _, l in ipairs(all) do redis.call('HINCRBY', counts, l, 1) end
    redis.call('HSET', meta, 'indexed', '1')
  end
  if redis.call('HEXISTS', counts, line) == 1 then return {1, created} end
end
local max = tonumber(ARGV[4])
if max > 0 and redis.call('LLEN', list) + lent() + 1 > max then return {2, created} end
if ARGV[2] == 'F' then redis.call('LPUSH', list, line) else redis.call('RPUSH', list, line) end
reindex({line})
notify(ARGV[5], ARGV[6])
return done({0, created})
`

// scriptEnsure creates an empty list. ARGV: full. Replies {0, unregistered}, {4, 0} no room for
// a new list.
const scriptEnsure = prelude + `
local err = wrongType()
if err then return err end
if noRoom() then return {4, 0} end
return {0, create()}
`

// scriptInsert is LOAD FIRST/LAST: the lines staged in KEYS[10] go to the front or the end, in
// their order. ARGV: position (F or L), the most lines a list may hold, how many lines were
// staged, the notification channel, the list's name, full. Replies {0, unregistered},
// {2, unregistered} list full, {3, 0} the staged lines are not all there (lost in a failover,
// or evicted): nothing is changed; {4, 0} no room for a new list.
const scriptInsert = prelude + `
local err = wrongType(staging)
if err then return err end
local n = redis.call('LLEN', staging)
if n ~= tonumber(ARGV[3]) then
  return unstaged(3)
end
if noRoom() then
  return unstaged(4)
end
local created = create()
local max = tonumber(ARGV[2])
if max > 0 and redis.call('LLEN', list) + lent() + n > max then
  return unstaged(2, created)
end
if n == 0 then return done({0, created}) end
if indexed() then reindex(redis.call('LRANGE', staging, 0, -1)) end
if ARGV[1] == 'F' then
  for i = 1, n do redis.call('LMOVE', staging, list, 'RIGHT', 'LEFT') end
else
  for i = 1, n do redis.call('LMOVE', staging, list, 'LEFT', 'RIGHT') end
end
notify(ARGV[4], ARGV[5])
return done({0, created})
`

// scriptReplace is INITFILE, LOAD REPLACE and the startup loads: the list becomes the lines
// staged in KEYS[10] (none staged: empty). ARGV: digest ("" for none), once (1: create the list
// only if it does not exist: a startup's load), the most lines a list may hold, how many lines
// were staged, the notification channel, the list's name, full. Replies {0, unregistered}, {1, 0,
// digest} kept, {2, 0} list full, {3, 0} the staged lines are not all there: nothing is changed;
// {4, 0} no room for a new list.
const scriptReplace = prelude + `
local err = wrongType(returns, leases, staging)
if err then return err end
local digest = ARGV[1]
if ARGV[2] == '1' and exists() then
  redis.call('DEL', staging)
  return {1, 0, redis.call('HGET', meta, 'digest') or ''}
end
local n = redis.call('LLEN', staging)
if n ~= tonumber(ARGV[4]) then
  return unstaged(3)
end
local max = tonumber(ARGV[3])
if max > 0 and n + lent() > max then
  return unstaged(2)
end
if noRoom() then
  return unstaged(4)
end
local created = create()
if n > 0 then
  redis.call('RENAME', staging, list)
  redis.call('PERSIST', list)
else
  redis.call('DEL', list)
end
redis.call('DEL', counts)
redis.call('HDEL', meta, 'indexed')
-- The returns go with the lines they counted, unless leases may still give some back.
if redis.call('HLEN', leases) == 0 then redis.call('DEL', returns) end
if digest == '' then redis.call('HDEL', meta, 'digest') else redis.call('HSET', meta, 'digest', digest) end
if n > 0 then notify(ARGV[5], ARGV[6]) end
return done({0, created})
`

// scriptReset is RESET. Replies {1} emptied, {0} no such list.
const scriptReset = prelude + `
if not exists() then return {0} end
local err = wrongType()
if err then return err end
redis.call('DEL', list, counts)
redis.call('HDEL', meta, 'indexed')
return done({1})
`

// scriptLength is LENGTH. Replies {length}, or {-1} when there is no such list.
const scriptLength = prelude + `
if not exists() then return {-1} end
local err = wrongType()
if err then return err end
return {redis.call('LLEN', list)}
`

// scriptLines is SAVE and EXPORT: one consistent copy. Replies {0, lines} or {1} not loaded.
const scriptLines = prelude + `
if not exists() then return {1} end
local err = wrongType()
if err then return err end
return {0, redis.call('LRANGE', list, 0, -1)}
`

// scriptView is Page, the web page's view of a list: ARGV[1] lines from index ARGV[2], and the
// length, read in one step. Replies {0, length, lines} or {1} not loaded.
const scriptView = prelude + `
if not exists() then return {1} end
local err = wrongType()
if err then return err end
local n, first, page = tonumber(ARGV[1]), tonumber(ARGV[2]), {}
local len = redis.call('LLEN', list)
-- Bounded by the length first: an offset or count near 2^63 is a float in Lua, which LRANGE
-- refuses; and LRANGE's end would be first-1 for no line: -1, the whole list, when first is 0.
if n > 0 and first < len then page = redis.call('LRANGE', list, first, math.min(first + n, len) - 1) end
return {0, len, page}
`

// The lease scripts (lease.go) begin with leasePrelude. ARGV[1] and ARGV[2] are the notification
// channel and the list's name, then each script's own. Their time is Redis' (TIME, replicated as
// the script's effects), so that every server agrees on when a lease runs out.
//
// KEYS[4] holds the running leases (id -> cmsgpack of max deliveries and lines), KEYS[5] their
// expiries (a sorted set of ids, by Unix ms), KEYS[6] the returns per line value, KEYS[7] the
// leases that ended without an acknowledgement ("<how>:<id>", by when to forget them: an entry
// whose time has passed is forgotten, whether or not it was removed yet), KEYS[8] the lines bound
// for the dead-letter list (scriptDeadLetters), and KEYS[9] (KEYS[10] as sent), when the lease is
// named by its id, the lease's index entry (keys.go: in the list's slot, since the id carries the slot's tag). The
// meta hash counts "leased" lines (those of KEYS[4] and KEYS[8]), "returned" and "deadLettered"
// ones, and keeps "due", when the list next needs the expiry loop.
//
// Every lease script first gives back the lines of the leases that have run out (expire), and
// replies through reply: {status, due, earlier, dead, ...}, where due is when the list next
// needs the expiry loop (-1: never), earlier 1 when that is earlier than the time recorded before
// (the server then tells the loop's schedule, which is in another slot), and dead 1 when lines
// went to KEYS[8], on their way to the dead letters.
//
// Key types. The hot scripts (a leased read or take, an Ack) do not check each key's type with
// TYPE: before their first write, every key they write has been read by a command that fails on
// a key of the wrong type (expires by expire's ZRANGEBYSCORE, meta by readDue or finish's HMGET,
// leases by locate's HGET, the list by LRANGE or LPOS), or is the first they write (leases' HSET
// in hold, returns' HDEL in an Ack), so a wrong type stops them before they change anything.
// Whatever writes more keys (expiry, release, RANDOM, the unique index) calls checkTypes first.
var leasePrelude = prelude + `
local channel, name = ARGV[1], ARGV[2]
local index = staging
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local memory = ` + strconv.FormatInt(store.LeaseMemory.Milliseconds(), 10) + `
-- brought: lines came back to the list; lowest: the earliest time this script made the list due
-- (a new expiry, dead letters now); condemned: lines went to the dead letters; due: meta's "due"
-- as read (dueRead), checked: checkTypes ran.
local brought, lowest, condemned, due, dueRead, checked = false, nil, false, nil, false, false

-- checkTypes checks the type of every key of the list, once; it returns an error reply or nil.
local function checkTypes()
  if checked then return nil end
  checked = true
  return wrongType(leases, expires, returns, ended, dead)
end

-- readDue reads meta's "due" once (and so checks meta's type).
local function readDue(v)
  if not dueRead then
    if v == nil then v = redis.call('HGET', meta, 'due') end
    due, dueRead = tonumber(v), true
  end
end

local function lower(t)
  if not lowest or t < lowest then lowest = t end
end

-- hold puts lines, just taken from the list, under lease id for ttl ms, indexes it, and returns
-- its expiry. Its HSET may be the script's first write.
local function hold(id, lines, ttl, max)
  local expiry = now + ttl
  redis.call('HSET', leases, id, cmsgpack.pack(max, lines))
  redis.call('ZADD', expires, expiry, id)
  redis.call('HINCRBY', meta, 'leased', #lines)
  redis.call('SET', index, name, 'PX', ttl + memory)
  lower(expiry)
  return expiry
end

-- finish ends lease id (packed: its entry, when read already), or only its line at index at, and
-- returns an error reply or nil. Acknowledged ('acked'), the lines are consumed: the script's
-- first write, after checks of meta (here) and of the lease's keys (expire, locate). Otherwise
-- ('expired', 'released'), after checkTypes, each line's return is counted, and it goes back to
-- the list at pos (F or L, keeping the lease's order) or, once it has come back max deliveries
-- times, to KEYS[8], on its way to the dead letters: still counted as leased until it is there.
local function finish(id, how, pos, at, packed)
  packed = packed or redis.call('HGET', leases, id)
  if not packed then
    -- The lease's entry is gone (its hash deleted by hand, or evicted), and its lines with it:
    -- forget its expiry, rather than fail on it at every expiry for ever.
    redis.call('ZREM', expires, id)
    return nil
  end
  local max, lines = cmsgpack.unpack(packed)
  local gone = lines
  if at then gone = {table.remove(lines, at)} end
  local info
  if how == 'acked' then
    info = redis.call('HMGET', meta, 'indexed', 'returned')
    if info[1] then
      -- The unique index is written, and unindex reads more keys.
      local err = checkTypes()
      if err then return err end
    end
    -- Only lines that went back have their returns counted: none if none ever did.
    if (tonumber(info[2]) or 0) > 0 then
      for i = 1, #gone, 1000 do
        redis.call('HDEL', returns, unpack(gone, i, math.min(i + 999, #gone)))
      end
    end
  end
  if at and #lines > 0 then
    redis.call('HSET', leases, id, cmsgpack.pack(max, lines))
  else
    if how ~= 'acked' then
      local expiry = tonumber(redis.call('ZSCORE', expires, id))
      redis.call('ZREMRANGEBYSCORE', ended, '-inf', now)
      redis.call('ZADD', ended, math.min(now, expiry) + memory, how .. ':' .. id)
    end
    redis.call('HDEL', leases, id)
    redis.call('ZREM', expires, id)
  end
  if how == 'acked' then
    redis.call('HINCRBY', meta, 'leased', -#gone)
    if info[1] then unindex(gone) end
    return nil
  end
  local back = {}
  for _, l in ipairs(gone) do
    local returned = redis.call('HINCRBY', returns, l, 1)
    if max > 0 and returned >= max then
      redis.call('HDEL', returns, l)
      redis.call('RPUSH', dead, l)
      condemned = true
      lower(now)
    else
      back[#back + 1] = l
    end
  end
  if #back == 0 then return nil end
  redis.call('HINCRBY', meta, 'leased', -#back)
  redis.call('HINCRBY', meta, 'returned', #back)
  if pos == 'F' then
    local reversed = {}
    for i = #back, 1, -1 do reversed[#reversed + 1] = back[i] end
    push('LPUSH', list, reversed)
  else
    push('RPUSH', list, back)
  end
  brought = true
  return nil
end

-- expire gives back the lines of the leases that have run out, at the front, the earliest
-- lease's first (it was read first). It returns an error reply or nil; with nothing run out it
-- only reads (and so checks) the expiries.
local function expire()
  local over = redis.call('ZRANGEBYSCORE', expires, '-inf', now)
  if #over == 0 then return nil end
  local err = checkTypes()
  if err then return err end
  for i = #over, 1, -1 do finish(over[i], 'expired', 'F') end
  return nil
end

-- begin checks every key's type, then expires; it returns an error reply, or nil to go on.
local function begin()
  local err = checkTypes()
  if err then return err end
  return expire()
end

-- locate finds the running lease named by id or, when id is '', the one that holds line and
-- expires first, with the index of the line in it. It returns the lease's id, that index (nil by
-- id) and its entry, or nil, nil, nil and how the lease ended (nil when it is unknown: never
-- given, acknowledged, forgotten, or of another list).
local function locate(id, line)
  if id ~= '' then
    local packed = redis.call('HGET', leases, id)
    if packed then return id, nil, packed end
    local forget = redis.call('ZMSCORE', ended, 'expired:' .. id, 'released:' .. id)
    for i, how in ipairs({'expired', 'released'}) do
      if forget[i] and tonumber(forget[i]) > now then return nil, nil, nil, how end
    end
    return nil
  end
  for from = 0, math.huge, 64 do
    local ids = redis.call('ZRANGE', expires, from, from + 63)
    if #ids == 0 then return nil end
    for _, lid in ipairs(ids) do
      local packed = redis.call('HGET', leases, lid)
      local _, lines = cmsgpack.unpack(packed)
      for i, l in ipairs(lines) do
        if l == line then return lid, i, packed end
      end
    end
  end
end

-- elsewhere is the list that the index entry names when it is not this one: the lease named by
-- id, not found here, may be another list's (the server was told the wrong list).
local function elsewhere()
  if not index then return nil end
  local owner = redis.pcall('GET', index)
  if type(owner) == 'string' and owner ~= name then return owner end
  return nil
end

-- reply ends every lease script: it wakes the reads waiting on the list if lines came back,
-- records when the list next needs the expiry loop, and replies. The loop's visit (exact) records
-- the truth (now while dead letters wait), and forgets the ended leases whose memory ran out; a
-- change records only an earlier time than the one recorded, which is never later than what the
-- list holds (a change only lowers it), so the time this change set (lowest) is all it compares:
-- the schedule holds the one recorded before until the loop's next visit, and an early visit
-- costs less than a report for each lease of a list whose leases come and go.
local function reply(status, exact, ...)
  if brought then notify(channel, name) end
  local when, waiting = lowest, condemned
  if exact then
    redis.call('ZREMRANGEBYSCORE', ended, '-inf', now)
    waiting = redis.call('LLEN', dead) > 0
    if waiting then
      when = now
    else
      when = tonumber(redis.call('ZRANGE', expires, 0, 0, 'WITHSCORES')[2])
    end
  end
  local earlier = false
  if when or exact then
    readDue()
    earlier = when and (not due or when < due)
    if earlier or exact and when ~= due then
      if when then redis.call('HSET', meta, 'due', when) else redis.call('HDEL', meta, 'due') end
    end
  end
  return {status, when or -1, earlier and 1 or 0, waiting and 1 or 0, ...}
end

-- answer is the reply of a change, recorded as the request's outcome when the change is made.
local function answer(status, ...)
  local r = reply(status, false, ...)
  if status == 0 then return done(r) end
  return r
end
`

// scriptReadLeased is READ with a lease. KEYS[9]: the lease's index entry. ARGV: channel, name,
// position, n, the tombstone, the lease's id, ttl (ms), max deliveries, then for R the fractions
// (scriptRead). Replies answer(0, expiry, lines, id) (a recalled outcome's id is another than the
// one this call chose), or scriptRead's failures through answer: 1, 2,
// or 3 and the length. F and L read their lines before they remove them, so that hold's HSET is
// the first write.
var scriptReadLeased = leasePrelude + `
local err = expire()
if err then return err end
local pos, n = ARGV[3], tonumber(ARGV[4])
local state = redis.call('HMGET', meta, 'created', 'due')
readDue(state[2])
if not state[1] then return answer(1) end
local picked
if pos == 'R' then
  err = checkTypes()
  if err then return err end
  local status, size
  picked, status, size = pick(pos, n, ARGV[5], 9)
  if not picked then return answer(status, size) end
elseif pos == 'F' then
  picked = redis.call('LRANGE', list, 0, n - 1)
else
  local last = redis.call('LRANGE', list, -n, -1)
  picked = {}
  for i = #last, 1, -1 do picked[#picked + 1] = last[i] end
end
if #picked == 0 then return answer(2) end
if #picked < n then return answer(3, #picked) end
local expiry = hold(ARGV[6], picked, tonumber(ARGV[7]), tonumber(ARGV[8]))
if pos == 'F' then
  redis.call('LTRIM', list, n, -1)
elseif pos == 'L' then
  redis.call('LTRIM', list, 0, -n - 1)
end
return answer(0, expiry, picked, ARGV[6])
`

// scriptTakeLeased takes the line FIND's scan chose under a lease (scriptTake's remove, its look
// before hold's first write). KEYS[9]: the lease's index entry. ARGV: channel, name, line, how far
// from the front to look, the lease's id, ttl (ms), max deliveries. Replies answer(0, expiry,
// line, id), answer(1) gone.
var scriptTakeLeased = leasePrelude + `
local err = expire()
if err then return err end
local line = ARGV[3]
if not redis.call('LPOS', list, line, 'MAXLEN', tonumber(ARGV[4])) then return answer(1) end
readDue()
local expiry = hold(ARGV[5], {line}, tonumber(ARGV[6]), tonumber(ARGV[7]))
redis.call('LREM', list, 1, line)
return answer(0, expiry, line, ARGV[5])
`

// scriptEnd is Ack and Release. KEYS[9], with an id: the lease's index entry, which an Ack
// deletes. ARGV: channel, name, the lease's id (empty for one by line), the line, how ('acked' or
// 'released'), position (F or L). Replies answer(0), answer(1) no such lease, answer(2, how) it
// ended: a release of a lease that ended is done already, and succeeds; answer(3, list) the index
// entry names another list.
var scriptEnd = leasePrelude + `
local err = expire()
if err then return err end
local how = ARGV[5]
if how ~= 'acked' then
  err = checkTypes()
  if err then return err end
end
local id, at, packed, ended = locate(ARGV[3], ARGV[4])
if id then
  err = finish(id, how, ARGV[6], at, packed)
  if err then return err end
  if how == 'acked' and index then redis.call('DEL', index) end
  return answer(0)
end
if ended and how == 'released' then return answer(0) end
if ended then return answer(2, ended) end
local owner = elsewhere()
if owner then return answer(3, owner) end
return answer(1)
`

// scriptExtend is Extend. KEYS[9], with an id: the lease's index entry, which lives on
// LeaseMemory past the new expiry. ARGV: channel, name, the lease's id (empty for one by line),
// the line, ttl (ms). Replies answer(0, id, expiry), or scriptEnd's failures.
var scriptExtend = leasePrelude + `
local err = expire()
if err then return err end
local id, _, _, how = locate(ARGV[3], ARGV[4])
if how then return answer(2, how) end
if not id then
  local owner = elsewhere()
  if owner then return answer(3, owner) end
  return answer(1)
end
readDue()
local expiry = now + tonumber(ARGV[5])
redis.call('ZADD', expires, expiry, id)
if index then redis.call('PEXPIREAT', index, expiry + memory) end
lower(expiry)
return answer(0, id, expiry)
`

// scriptReload is RELOAD: the list becomes the lines staged in KEYS[9] (scriptReplace), and every
// running lease of the list ends as an Ack of it would, in the same step, so that no line of the
// content replaced comes back, from a lease taken before the reload or while its lines were being
// uploaded. The leases' lines are consumed (their unique counts and returns go with the content),
// "leased" drops by them, and their expiries and index entries are deleted. Lines waiting in
// KEYS[8] are no lease's any more: they stay there, still counted in "leased", until
// scriptDeadLetters moves them, which reply's dead flag asks of the server. ARGV: channel, name,
// the slot tag of the list's lease ids (slots.go), the index entry of that tag alone (leaseIndex:
// an id's entry is that followed by the rest of the id), digest ("" for none), the most lines a
// list may hold, how many lines were staged, full. Every check comes before the first write.
// Replies reply(0, true, unregistered, the lines the leases held), or {2, 0} list full, {3, 0}
// the staged lines are not all there, {4, 0} no room for a new list: nothing is changed.
var scriptReload = leasePrelude + `
local err = wrongType(staging)
if err then return err end
err = begin()
if err then return err end
local n = redis.call('LLEN', staging)
if n ~= tonumber(ARGV[7]) then return unstaged(3) end
local held = redis.call('HGETALL', leases)
local gone = 0
for i = 2, #held, 2 do
  local _, lines = cmsgpack.unpack(held[i])
  gone = gone + #lines
end
local max = tonumber(ARGV[6])
if max > 0 and n + lent() - gone > max then return unstaged(2) end
if noRoom() then return unstaged(4) end
local created = create()
local tag, entry = ARGV[3], ARGV[4]
for i = 1, #held, 2 do
  local id = held[i]
  if id:sub(1, #tag) == tag then redis.call('DEL', entry .. id:sub(#tag + 1)) end
end
redis.call('DEL', leases, expires, counts, returns)
if gone > 0 then redis.call('HINCRBY', meta, 'leased', -gone) end
redis.call('HDEL', meta, 'indexed')
if n > 0 then
  redis.call('RENAME', staging, list)
  redis.call('PERSIST', list)
  brought = true
else
  redis.call('DEL', list)
end
local digest = ARGV[5]
if digest == '' then redis.call('HDEL', meta, 'digest') else redis.call('HSET', meta, 'digest', digest) end
return done(reply(0, true, created, gone))
`

// scriptExpire is the expiry loop's visit: begin does it all. ARGV: channel, name. Replies
// reply(0), with the list's true due time.
var scriptExpire = leasePrelude + `
local err = begin()
if err then return err end
return reply(0, true)
`

// scriptDeadLetters moves the lines waiting in KEYS[8] to the dead-letter list, a batch at a time:
// the server copies a batch into that list (another slot), then calls again to drop it here, so
// that a crash between the two copies a batch twice at worst, and never loses it. The batch is
// claimed (meta field "deadClaim": "<token> <ms>") so that servers moving at once do not both
// copy it; a claim older than the given staleness is a server that died, and is taken over.
// ARGV: channel, name, the mover's token, how many lines its last batch copied (0 at first), the
// batch's size, the staleness (ms). Replies answer(0, lines of the next batch; none when all are
// moved), answer(1) another server took the claim over, answer(2) another server is moving them.
var scriptDeadLetters = leasePrelude + `
local err = begin()
if err then return err end
local token, moved = ARGV[3], tonumber(ARGV[4])
local owner, since = string.match(redis.call('HGET', meta, 'deadClaim') or '', '^(%S+) (%d+)$')
local mine = owner == token
if moved > 0 then
  if not mine then return answer(1) end
  local lines = redis.call('LRANGE', dead, 0, moved - 1)
  redis.call('LTRIM', dead, moved, -1)
  redis.call('HINCRBY', meta, 'leased', -moved)
  redis.call('HINCRBY', meta, 'deadLettered', moved)
  unindex(lines)
end
if redis.call('LLEN', dead) == 0 then
  if mine then redis.call('HDEL', meta, 'deadClaim') end
  return answer(0)
end
if owner and not mine and now - tonumber(since) < tonumber(ARGV[6]) then return answer(2) end
redis.call('HSET', meta, 'deadClaim', token .. ' ' .. now)
return answer(0, redis.call('LRANGE', dead, 0, tonumber(ARGV[5]) - 1))
`

// scriptSchedule sets a list's entry in the expiry loop's schedule (KEYS[1], keys.go). ARGV: the
// list's name, when it next needs the loop (-1: never), and for the loop's own report the score
// it saw before its visit (empty for a change's report). Replies {0} set, {1} kept.
const scriptSchedule = `
local key, name = KEYS[1], ARGV[1]
local cur, due, seen = tonumber(redis.call('ZSCORE', key, name)), tonumber(ARGV[2]), tonumber(ARGV[3])
if seen then
  -- The loop's visit stands only if no change reported since it looked: the change's is newer.
  if cur ~= seen then return {1} end
elseif cur and cur <= due then
  -- A change keeps an earlier entry, unless that one is due: a loop visiting the list may have
  -- looked before the change, and would drop the entry.
  local clock = redis.call('TIME')
  if cur > tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) then return {1} end
end
if due < 0 then redis.call('ZREM', key, name) else redis.call('ZADD', key, due, name) end
return {0}
`

// scriptDueLists reads the expiry loop's schedule (KEYS[1]) with Redis' clock. ARGV: how many
// entries. Replies {now, name, due, name, due, ...}: the earliest entries.
const scriptDueLists = `
local clock = redis.call('TIME')
local reply = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
table.insert(reply, 1, tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000))
return reply
`
