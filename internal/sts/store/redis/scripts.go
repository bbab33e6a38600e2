package redis

// The Lua scripts that make every change to a list one atomic step in Redis, whichever server
// runs it. Each touches only the keys of one list, all in the list's hash slot (keys.go), so they
// run on Redis Cluster too. A script checks the list key's type before it writes anything: Redis
// does not undo a script's earlier writes when a later command fails, so a key of the wrong type
// (someone SET a string where a list lives) must stop it first.
//
// KEYS[1] is the list, KEYS[2] its meta hash (field "created" marks that the list exists, since
// Redis deletes an empty LIST key; "digest" is store.ListInfo.Digest; "indexed" says the unique
// index KEYS[3] is kept), KEYS[3] the unique index (line -> count), KEYS[4] when present a staging
// list that a bulk change was uploaded into.
//
// Replies are arrays whose first element is a status: 0 done, then the script's own codes. A
// script that creates a list replies a second element, 1 while the list's name is not in the
// registry yet (the server adds it there, then sets the meta hash's "registered").
// The last ARGV of a script that creates a list is "1" when the server last saw the registry at
// --max-lists: the script then replies {4, 0} instead of creating a list that does not exist yet
// (the registry is in another slot, so the script cannot count it itself).

// prelude is shared by every script.
const prelude = `
local list, meta, counts, staging = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- wrongType checks every key the script may write: a list and two hashes, or none yet.
local function wrongType()
  for key, want in pairs({[list] = 'list', [meta] = 'hash', [counts] = 'hash'}) do
    local t = redis.call('TYPE', key)['ok']
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

-- unstaged is the reply {code, second} of a bulk change that is not made: its staged lines go.
local function unstaged(code, second)
  redis.call('DEL', staging)
  return {code, second or 0}
end

-- unindex takes removed lines out of the unique index, or drops the index with the last line.
local function unindex(lines)
  if not indexed() then return end
  if redis.call('LLEN', list) == 0 then
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

-- push appends lines in chunks: unpack is bounded by Lua's C stack.
local function push(cmd, key, lines)
  for i = 1, #lines, 1000 do
    redis.call(cmd, key, unpack(lines, i, math.min(i + 999, #lines)))
  end
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
local err = wrongType()
if err then return err end
if not exists() then return {1} end
local size = redis.call('LLEN', list)
if size == 0 then return {2} end
local n = tonumber(ARGV[2])
if n > size then return {3, size} end
local pos, keep, tomb = ARGV[1], ARGV[3] == '1', ARGV[4]
local picked
if pos == 'F' then
  picked = redis.call('LPOP', list, n)
elseif pos == 'L' then
  picked = redis.call('RPOP', list, n)
else
  picked = {}
  for i = 1, n do
    local len = size - i + 1
    local idx = math.floor(tonumber(ARGV[4 + i]) * len)
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
end
if keep then push('RPUSH', list, picked) else unindex(picked) end
return {0, picked}
`

// scriptPage is a page of FIND's scan. ARGV: start, stop. Replies {0, lines} or {1} not loaded.
const scriptPage = prelude + `
if not exists() then return {1} end
return {0, redis.call('LRANGE', list, tonumber(ARGV[1]), tonumber(ARGV[2]))}
`

// scriptTake removes a line that FIND's scan chose, if it is still where the scan saw it or near
// (lines come and go at the ends, so it can only have moved by what was added at the front).
// ARGV: line, keep (1/0), how far from the front to look. Replies {0} taken, {1} gone (another
// server took it, or moved it to the end with KEEP): the scan goes on to its next hit, instead of
// LREM walking the whole list to the moved copy.
const scriptTake = prelude + `
local err = wrongType()
if err then return err end
local line = ARGV[1]
if not redis.call('LPOS', list, line, 'MAXLEN', tonumber(ARGV[3])) then return {1} end
redis.call('LREM', list, 1, line)
if ARGV[2] == '1' then redis.call('RPUSH', list, line) else unindex({line}) end
return {0}
`

// scriptAdd is ADD. ARGV: line, position (F or L), unique (1/0), the most lines a list may hold
// (0 for no limit), the notification channel, the list's name, full. Replies {0, unregistered},
// {1, unregistered} duplicate, {2, unregistered} list full, {4, 0} no room for a new list.
const scriptAdd = prelude + `
local err = wrongType()
if err then return err end
if noRoom() then return {4, 0} end
local line = ARGV[1]
local created = create()
if ARGV[3] == '1' then
  if not indexed() then
    local all = redis.call('LRANGE', list, 0, -1)
    for _, l in ipairs(all) do redis.call('HINCRBY', counts, l, 1) end
    redis.call('HSET', meta, 'indexed', '1')
  end
  if redis.call('HEXISTS', counts, line) == 1 then return {1, created} end
end
local max = tonumber(ARGV[4])
if max > 0 and redis.call('LLEN', list) + 1 > max then return {2, created} end
if ARGV[2] == 'F' then redis.call('LPUSH', list, line) else redis.call('RPUSH', list, line) end
reindex({line})
notify(ARGV[5], ARGV[6])
return {0, created}
`

// scriptEnsure creates an empty list. ARGV: full. Replies {0, unregistered}, {4, 0} no room for
// a new list.
const scriptEnsure = prelude + `
local err = wrongType()
if err then return err end
if noRoom() then return {4, 0} end
return {0, create()}
`

// scriptInsert is LOAD FIRST/LAST: the lines staged in KEYS[4] go to the front or the end, in
// their order. ARGV: position (F or L), the most lines a list may hold, how many lines were
// staged, the notification channel, the list's name, full. Replies {0, unregistered},
// {2, unregistered} list full, {3, 0} the staged lines are not all there (lost in a failover,
// or evicted): nothing is changed; {4, 0} no room for a new list.
const scriptInsert = prelude + `
local err = wrongType()
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
if max > 0 and redis.call('LLEN', list) + n > max then
  return unstaged(2, created)
end
if n == 0 then return {0, created} end
if indexed() then reindex(redis.call('LRANGE', staging, 0, -1)) end
if ARGV[1] == 'F' then
  for i = 1, n do redis.call('LMOVE', staging, list, 'RIGHT', 'LEFT') end
else
  for i = 1, n do redis.call('LMOVE', staging, list, 'LEFT', 'RIGHT') end
end
notify(ARGV[4], ARGV[5])
return {0, created}
`

// scriptReplace is INITFILE, LOAD REPLACE and the startup loads: the list becomes the lines
// staged in KEYS[4] (none staged: empty). ARGV: digest ("" for none), once (1: keep a list whose
// digest is this one), the most lines a list may hold, how many lines were staged, the
// notification channel, the list's name, full. Replies {0, unregistered}, {1, 0} kept, {2, 0} list
// full, {3, 0} the staged lines are not all there: nothing is changed; {4, 0} no room for a new
// list.
const scriptReplace = prelude + `
local err = wrongType()
if err then return err end
local digest = ARGV[1]
if ARGV[2] == '1' and digest ~= '' and redis.call('HGET', meta, 'digest') == digest then
  return unstaged(1)
end
local n = redis.call('LLEN', staging)
if n ~= tonumber(ARGV[4]) then
  return unstaged(3)
end
local max = tonumber(ARGV[3])
if max > 0 and n > max then
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
if digest == '' then redis.call('HDEL', meta, 'digest') else redis.call('HSET', meta, 'digest', digest) end
if n > 0 then notify(ARGV[5], ARGV[6]) end
return {0, created}
`

// scriptReset is RESET. Replies {1} emptied, {0} no such list.
const scriptReset = prelude + `
if not exists() then return {0} end
local err = wrongType()
if err then return err end
redis.call('DEL', list, counts)
redis.call('HDEL', meta, 'indexed')
return {1}
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
