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
// Redis runs one script at a time and every other client waits meanwhile, on a Redis the table
// servers may share with other applications: no script's work grows with the list. Whatever
// would (dropping a list's chunks, indexing a long list for UNIQUE, making uploaded chunks
// permanent, forgetting a reloaded list's leases) is cut into bounded steps, each a script whose
// intermediate state every other server reads correctly.
//
// Layout (keys.go). A list's lines are cut into chunks of at most chunkLines lines, each a Redis
// LIST: the first chunk, the head, is the list's own key (KEYS[1]), so that a list of up to
// chunkLines lines is one plain LIST; the others are <list>:c:<id>, in order, their ids listed in
// the LIST <list>:chunks. The head is empty only when the list is. A RANDOM read picks a chunk,
// then a line in it, and removes it with LSET and LREM within that chunk: its cost is bounded by
// chunkLines, not by the list. The meta hash counts the lines of the chunks other than the head
// ("rest"), so that a list's length is LLEN of the head plus rest, and numbers the chunks the
// scripts make ("seq"). A chunk that RANDOM, FIND or a lease thinned below a quarter of
// chunkLines is merged into a neighbour, so that chunks stay mostly full.
//
// KEYS[1] is the list's key, its head; the prelude names its companions (keys.go): meta, its
// meta hash (field "created" marks that the list exists, since Redis deletes an empty LIST key;
// "digest" is store.ListInfo.Digest; "sharded", "building", "epoch", "head" and "cursor" are the
// unique index's; "leased", "returned" and "deadLettered" are the lease counters of
// store.ListInfo; "due" and "deadClaim" are the lease scripts'), counts the unique index, and the
// leases' keys (lease scripts, below). KEYS[2] is the key of the outcome of the client's
// store.Request (KEYS[1] again under none), KEYS[3] when present the directory of chunks that a
// bulk change was uploaded into (staging: a LIST of chunk ids, each chunk full but the last, all
// expiring until a script adopts them) or a lease's index entry.
//
// Requests (store/request.go). ARGV[1] is the request's window in ms ("" for a change made under
// no request), ARGV[2] its fingerprint, ARGV[3] the tombstone (what a removal from the middle of
// a chunk overwrites its line with before LREM: random, per server, so that no line equals it).
// The prelude takes these off ARGV, so that each script's own arguments start at ARGV[1], and
// answers the outcome recorded for the request, if
// any, before the script does anything: the script's own reply, as it was (recall). A script
// that makes its change replies through done, which records that reply under the request in the
// same step. A failure that changes nothing is not recorded.
//
// Replies are arrays whose first element is a status: 0 done, then the script's own codes. A
// script that creates a list replies a second element, 1 while the list's name is not in the
// registry yet (the server adds it there, then sets the meta hash's "registered").
// The last ARGV of a script that creates a list is "1" when the server last saw the registry at
// --max-lists: the script then replies {4, 0} instead of creating a list that does not exist yet
// (the registry is in another slot, so the script cannot count it itself).
//
// The unique index. It is built when a UNIQUE ADD first needs it, in bounded steps
// (scriptIndex), and kept from then on by every change. While it is being built ("building" in
// meta), the chunks it has counted are known by their ids: those above "building" (made since
// it began; "all" when every chunk but the marked ones is counted) or marked "d" in
// <list>:marks, less those marked "p" (the chunks a LOAD brought in, to be counted, marked all at
// once by their upload's tag, s<hex> of the ids s<hex>.<n>); <list>:indexing
// lists the chunks to count, and meta "head" names the chunk that became the head while it is
// one still to count. Every change counts what it moves between counted and uncounted places: a
// consumed line leaves the index if its chunk was counted, a line given to a lease or bound for
// the dead letters enters it if it was not (the index counts lent lines: they may come back). A
// lease records the index's "epoch" when its lines are counted. The build counts the leases of
// before it first ("cursor" is "done" then), then the chunks; no line goes into a chunk still to
// count (closed). Meanwhile a UNIQUE ADD answers {5}, and its server looks for the line in the
// chunks still to count (scriptCheck, in bounded steps: they only lose lines) while the build
// goes on in the background, then asks again with what it found: a line in none of them is in
// the list only if the index counts it.
//
// Chores. What a change leaves to do in bounded steps is queued in <list>:chores (cmsgpack of
// kind, key, and the kind's own arguments): "drop" deletes the chunks whose ids a key lists (a
// list reset or replaced), "keep" makes the chunks an upload made permanent (PERSIST), "unlease"
// deletes the index entries of the leases of a hash that a RELOAD ended. The server that made the
// change runs them at once (scriptChores); the expiry loop's visit (scriptExpire) runs what a
// server that died left, the sweep finding the list by its chores.
//
// Garbage. A structure a change drops (the unique index's shards, the returns, the leases'
// expiries) is deleted at once when it is small; a bigger one is renamed to <list>:trash:<n>,
// listed in <list>:garbage (cmsgpack of the key and a hash's HSCAN cursor), and emptied
// garbageBudget members a step (scrap, runGarbage): UNLINK would have a thread of Redis free it
// all at once, which on a machine of few processors takes one from the thread that runs the
// commands. The server that made the change empties it in the background, paced (after its
// chores, which its client waits for); the expiry loop visits a list with garbage once a second,
// and a server that visits it empties it too.

// chunkLines is the most lines a chunk holds; choreBudget how many chunks or lease entries a
// chore step handles; indexBudget how many lines a step of the unique index's build counts;
// expiryBatch how many leases a script gives back at most, the rest at the loop's next visit;
// indexShards how many hashes the unique index is cut into; viewWalk how many chunks a step of
// Page walks past; garbageBudget how many members of a big structure dropped (scrap) a step of
// the garbage deletes, and the most a structure deleted at once holds.
const (
	chunkLines    = 512
	choreBudget   = 256
	indexBudget   = 512
	expiryBatch   = 64
	indexShards   = 32
	viewWalk      = 1024
	garbageBudget = 256
)

// recalled is the outcome recorded under request (a key), for a request whose window is not ""
// and whose fingerprint is fingerprint: the reply recorded, an STSREUSED error for another
// fingerprint, or nil when there is none.
const recalled = `
local function recalled(request, window, fingerprint)
  if window == '' then return nil end
  local kept = redis.call('GET', request)
  if not kept then return nil end
  local was, reply = cmsgpack.unpack(kept)
  if was ~= fingerprint then
    return redis.error_reply('STSREUSED the request id was sent before with another request')
  end
  return reply
end
`

// scriptRecall is the outcome recorded for a request, if any: KEYS[1] its key, ARGV[1] its window,
// ARGV[2] its fingerprint. Replies the recorded reply, or {} when there is none.
const scriptRecall = recalled + `
return recalled(KEYS[1], ARGV[1], ARGV[2]) or {}
`

// prelude is shared by every script of a list.
var prelude = `
local list, request, staging = KEYS[1], KEYS[2], KEYS[3]
local window, fingerprint, tomb = table.remove(ARGV, 1), table.remove(ARGV, 1), table.remove(ARGV, 1)
` + recalled + `
local kept = recalled(request, window, fingerprint)
if kept then return kept end
local meta, counts, leases, expires = list .. ':meta', list .. ':unique', list .. ':leases', list .. ':expires'
local returns, ended, dead = list .. ':returns', list .. ':ended', list .. ':dead'
local chunks, chores, todo, marks = list .. ':chunks', list .. ':chores', list .. ':indexing', list .. ':marks'
local garbage = list .. ':garbage'
local CHUNK = ` + strconv.Itoa(chunkLines) + `

local function chunkKey(id) return list .. ':c:' .. id end

-- done records reply as the outcome of the request, if any, and returns it.
local function done(reply)
  if window ~= '' then redis.call('SET', request, cmsgpack.pack(fingerprint, reply), 'PX', window) end
  return reply
end

-- wrongType checks the list, its meta hash, its unique index, its chunk directory and chores, and
-- the other keys the script may write: each of its type, or none yet.
local function wrongType(...)
  local types = {[list] = 'list', [meta] = 'hash', [counts] = 'hash', [leases] = 'hash', [chunks] = 'list',
    [chores] = 'list', [expires] = 'zset', [returns] = 'hash', [ended] = 'zset', [dead] = 'list'}
  if staging then types[staging] = 'list' end
  for _, key in ipairs({list, meta, counts, chunks, chores, ...}) do
    local t, want = redis.call('TYPE', key)['ok'], types[key]
    if t ~= want and t ~= 'none' then
      return redis.error_reply('WRONGTYPE the key ' .. key .. ' holds a ' .. t .. ', not a ' .. want .. ': sts changes nothing in it')
    end
  end
  return nil
end

-- create marks the list as existing, and says whether no server has registered its name yet
-- (in the registry, a key of another slot, which the server then writes).
-- created says whether the list exists, once read (exists, open).
local created

local function create()
  redis.call('HSETNX', meta, 'created', '1')
  created = true
  if redis.call('HEXISTS', meta, 'registered') == 1 then return 0 end
  return 1
end

local function exists()
  if created == nil then created = redis.call('EXISTS', meta) == 1 end
  return created
end

-- sized returns the size of key, which must be a want (list, hash or zset) or missing: a read that
-- fails on a key of another type, which stops the script (before any write: call it first) with
-- an error naming the key. It costs less than wrongType's TYPE, for the scripts of every request.
local sizes = {list = 'LLEN', hash = 'HLEN', zset = 'ZCARD'}
local function sized(key, want)
  local n = redis.pcall(sizes[want], key)
  if type(n) == 'table' then
    error(redis.error_reply('WRONGTYPE the key ' .. key .. ' holds a ' .. redis.call('TYPE', key)['ok'] .. ', not a ' .. want .. ': sts changes nothing in it'))
  end
  return n
end

-- noRoom says the list does not exist and the server found no room for one more list.
local function noRoom()
  return ARGV[#ARGV] == '1' and not exists()
end

-- lent is how many lines the list lent (under leases, or on their way to the dead letters): they
-- may come back at any time, so its line limit counts them.
local function lent()
  return tonumber(redis.call('HGET', meta, 'leased')) or 0
end

-- push adds lines in batches (unpack is bounded by Lua's C stack): RPUSH appends them in order,
-- LPUSH puts them at the front in reverse order.
local function push(cmd, key, lines)
  for i = 1, #lines, 1000 do
    redis.call(cmd, key, unpack(lines, i, math.min(i + 999, #lines)))
  end
end

local function reversed(lines)
  local r = {}
  for i = #lines, 1, -1 do r[#r + 1] = lines[i] end
  return r
end

-- chore queues a task of the housekeeping (see above).
local function chore(...)
  redis.call('RPUSH', chores, cmsgpack.pack(...))
end

-- scrap deletes key (a hash, sorted set, set or list of the list's): at once when it holds up to
-- SCRAP members, else renamed to a trash key that <list>:garbage lists, which runGarbage empties
-- a bounded number of members a step. UNLINK would give a big one to a thread of Redis that
-- frees it all at once meanwhile: on a machine of few processors, that thread takes one from the
-- thread that runs every client's commands, a second or more for the index of ten million lines.
local SCRAP = ` + strconv.Itoa(garbageBudget) + `
local sizeOf = {hash = 'HLEN', zset = 'ZCARD', set = 'SCARD', list = 'LLEN'}
local function scrap(key)
  local size = sizeOf[redis.call('TYPE', key)['ok']]
  if size and redis.call(size, key) > SCRAP then
    local trash = list .. ':trash:' .. redis.call('HINCRBY', meta, 'seq', 1)
    if type(redis.pcall('RPUSH', garbage, cmsgpack.pack(trash, '0'))) == 'number' then
      redis.call('RENAME', key, trash)
    else
      -- The garbage's key holds another type (not sts's).
      redis.call('UNLINK', key)
    end
    return
  end
  -- Not UNLINK, whose thread frees a structure of more than 64 members.
  redis.call('DEL', key)
end

-- runGarbage empties the trash keys of <list>:garbage (scrap), up to budget members (a hash's by
-- HSCAN, whose cursor the entry keeps, and HDEL), and says whether some are left.
local function runGarbage(budget)
  while budget > 0 do
    local entry = redis.pcall('LINDEX', garbage, 0)
    if type(entry) ~= 'string' then return false end
    local key, cursor = cmsgpack.unpack(entry)
    local t, n = redis.call('TYPE', key)['ok'], math.min(budget, SCRAP)
    if t == 'hash' then
      local scan = redis.call('HSCAN', key, cursor, 'COUNT', n)
      local fields = {}
      for i = 1, #scan[2], 2 do fields[#fields + 1] = scan[2][i] end
      if #fields > 0 then redis.call('HDEL', key, unpack(fields)) end
      cursor = scan[1]
    elseif t == 'zset' then
      redis.call('ZPOPMIN', key, n)
    elseif t == 'set' then
      redis.call('SPOP', key, n)
    elseif t == 'list' then
      redis.call('LPOP', key, n)
    elseif t ~= 'none' then
      redis.call('UNLINK', key)
    end
    budget = budget - n
    if redis.call('EXISTS', key) == 0 then
      redis.call('LPOP', garbage)
    else
      redis.call('LSET', garbage, 0, cmsgpack.pack(key, cursor))
    end
  end
  return redis.call('EXISTS', garbage) == 1
end

-- The unique index: its state ('none', 'building' or 'indexed'), read once; since is the
-- building's threshold (nil for "all"); epoch the index's. A built index is meta "sharded": an
-- index of an earlier version (one hash, <list>:unique, under meta "indexed") is not this one's,
-- and reads as none, so that a UNIQUE ADD builds this one (dropIndex drops the old).
local state, since, epoch
-- indexState takes the unique index's state from meta's "sharded", "building" and "epoch".
local function indexState(indexed, building, e)
  epoch = tonumber(e) or 0
  if indexed then
    state = 'indexed'
  elseif building then
    state, since = 'building', tonumber(building)
  else
    state = 'none'
  end
end
local function readIndex()
  if state then return end
  local v = redis.call('HMGET', meta, 'sharded', 'building', 'epoch')
  indexState(v[1], v[2], v[3])
end

-- index makes the unique index's functions when a script first needs them: most lists have no
-- index, and a script pays for every function it defines at each call.
local SHARDS = ` + strconv.Itoa(indexShards) + `
local ix
local function index()
  if ix then return ix end
  -- counted says whether the index counts the lines of chunk id (nil: the head).
  local function counted(id)
    readIndex()
    if state ~= 'building' then return state == 'indexed' end
    if not id then
      id = redis.call('HGET', meta, 'head')
      if not id then return true end
    end
    local mark = redis.call('HGET', marks, id)
    -- An upload's chunks are marked by its tag (s<hex> of s<hex>.<n>), a field for all of them.
    if not mark and string.byte(id) == 115 then mark = redis.call('HGET', marks, string.match(id, '^[^.]*')) end
    if mark then return mark == 'd' end
    if not since then return true end
    local n = tonumber(id)
    return n ~= nil and n > since
  end

  -- leaseCounted says whether the index counts the lines of a lease whose entry recorded epoch e
  -- (nil: written before epochs, by a server whose index counted every lease).
  local function leaseCounted(e)
    readIndex()
    if state == 'none' then return false end
    if e == nil then return state == 'indexed' or since == nil end
    return e == epoch
  end

  -- shard is the hash of the unique index that counts line: the index is cut into SHARDS hashes,
  -- by a few of the line's bytes, since a hash table that doubles reallocates its whole table in
  -- one command (8 MB at a million lines): each shard's is SHARDS times smaller. The shards'
  -- shares grow geometrically over one octave (the last twice the first), so that they do not
  -- all double at the same moment.
  local shards = {}
  local function shardKey(i)
    local key = shards[i]
    if not key then
      key = counts .. ':' .. i
      shards[i] = key
    end
    return key
  end
  local function shard(l)
    local a, b, c, d = string.byte(l, 1, 4)
    local e, f, g, h = string.byte(l, -4, -1)
    local x = 7 * #l + (a or 0) + 3 * (b or 0) + 5 * (c or 0) + 7 * (d or 0)
      + 11 * (e or 0) + 13 * (f or 0) + 17 * (g or 0) + 19 * (h or 0)
    return shardKey(math.floor(SHARDS * math.log(1 + (x % 1021) / 1021) / math.log(2)))
  end

  local function indexed(line)
    return (tonumber(redis.call('HGET', shard(line), line)) or 0) > 0
  end

  -- startIndex makes each shard a hash table from its first line: a new hash is a listpack, in
  -- which each field costs a scan of the others (up to hash-max-listpack-entries, 512 by default),
  -- and a step of the build writes to every shard. A field longer than hash-max-listpack-value,
  -- counting 0 (which is no line's count), makes it a hash table for good.
  local function startIndex()
    local field = '\0sts: keeps this shard a hash table\0' .. string.rep('.', 64)
    for i = 0, SHARDS - 1 do redis.call('HSET', shardKey(i), field, 0) end
  end

  -- count adds delta to the count of each of lines: one HINCRBY a line for a few, and for more
  -- (a chunk the build counts) their counts read and written back a shard at a time, which costs
  -- Redis a third of as many HINCRBYs.
  local function count(lines, delta)
    if #lines <= 8 then
      for _, l in ipairs(lines) do
        local key = shard(l)
        if redis.call('HINCRBY', key, l, delta) <= 0 then redis.call('HDEL', key, l) end
      end
      return
    end
    local by, groups = {}, {}
    for _, l in ipairs(lines) do
      if by[l] then
        by[l] = by[l] + delta
      else
        by[l] = delta
        local key = shard(l)
        local group = groups[key]
        if not group then
          group = {}
          groups[key] = group
        end
        group[#group + 1] = l
      end
    end
    for key, group in pairs(groups) do
      local set, gone = {}, {}
      for j, n in ipairs(redis.call('HMGET', key, unpack(group))) do
        local l = group[j]
        local c = (tonumber(n) or 0) + by[l]
        if c > 0 then
          set[#set + 1] = l
          set[#set + 1] = c
        else
          gone[#gone + 1] = l
        end
      end
      if #set > 0 then redis.call('HSET', key, unpack(set)) end
      if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
    end
  end

  ix = {counted = counted, leaseCounted = leaseCounted, indexed = indexed, start = startIndex, count = count, shardKey = shardKey}
  return ix
end

-- left counts lines that left chunk id: consumed, or lent (lent lines are counted).
local function left(lines, id, lend)
  readIndex()
  if state == 'none' then return end
  local c = index().counted(id)
  if c and not lend then index().count(lines, -1) elseif lend and not c then index().count(lines, 1) end
end

-- arrived counts lines that arrived in chunk id, counted before (a lease's) or not (new ones).
local function arrived(lines, id, was)
  readIndex()
  if state == 'none' then return end
  local c = index().counted(id)
  if c and not was then index().count(lines, 1) elseif was and not c then index().count(lines, -1) end
end

-- dropIndex forgets the unique index, built or being built.
local function dropIndex()
  scrap(counts)
  scrap(marks)
  for i = 0, SHARDS - 1 do scrap(index().shardKey(i)) end
  redis.call('UNLINK', todo)
  redis.call('HDEL', meta, 'sharded', 'indexed', 'building', 'head', 'cursor')
  state, since = 'none', nil
end

-- The chunks. rest is meta's "rest", read once.
local rest
local function restOf()
  if not rest then rest = tonumber(redis.call('HGET', meta, 'rest')) or 0 end
  return rest
end
local function addRest(n)
  if n ~= 0 then rest = redis.call('HINCRBY', meta, 'rest', n) end
end

local function length()
  return redis.call('LLEN', list) + restOf()
end

-- open reads in one command what a request's script needs of the meta hash: whether the list
-- exists, rest, the unique index's state.
local function open()
  local v = redis.call('HMGET', meta, 'created', 'rest', 'sharded', 'building', 'epoch')
  created, rest = v[1] ~= false, tonumber(v[2]) or 0
  indexState(v[3], v[4], v[5])
end

local function newChunk()
  return tostring(redis.call('HINCRBY', meta, 'seq', 1))
end

-- demote makes the head the first chunk of the directory, leaving the head empty.
local function demote()
  local size = redis.call('LLEN', list)
  if size == 0 then return end
  readIndex()
  local id
  if state == 'building' then
    id = redis.call('HGET', meta, 'head')
    if id then redis.call('HDEL', meta, 'head') end
  end
  id = id or newChunk()
  redis.call('RENAME', list, chunkKey(id))
  redis.call('LPUSH', chunks, id)
  addRest(size)
end

-- promote makes the first chunk of the directory the head, which is empty; false when there is
-- none. A chunk an upload made may still expire: the head never does.
local function promote()
  while true do
    local id = redis.call('LPOP', chunks)
    if not id then return false end
    local key = chunkKey(id)
    local size = redis.call('LLEN', key)
    if size > 0 then
      redis.call('RENAME', key, list)
      redis.call('PERSIST', list)
      addRest(-size)
      readIndex()
      if state == 'building' then
        if index().counted(id) then redis.call('HDEL', meta, 'head') else redis.call('HSET', meta, 'head', id) end
      end
      return true
    end
  end
end

-- last is the last chunk: its id (nil for the head) and key.
local function last()
  local id = redis.call('LINDEX', chunks, -1)
  if id then return id, chunkKey(id) end
  return nil, list
end

-- popFront removes up to n lines from the front and returns them, in order; lend: they go to a
-- lease.
local function popFront(n, lend)
  local out = {}
  while #out < n do
    local got = redis.call('LPOP', list, n - #out)
    if got then
      left(got, nil, lend)
      for _, l in ipairs(got) do out[#out + 1] = l end
    end
    if redis.call('EXISTS', list) == 0 and not promote() then break end
  end
  return out
end

-- popBack removes up to n lines from the end and returns them, the last first.
local function popBack(n, lend)
  local out = {}
  while #out < n do
    local id, key = last()
    local got = redis.call('RPOP', key, n - #out)
    if got then
      if id then addRest(-#got) end
      left(got, id, lend)
      for _, l in ipairs(got) do out[#out + 1] = l end
    elseif not id then
      break
    end
    if id and redis.call('EXISTS', key) == 0 then redis.call('RPOP', chunks) end
  end
  return out
end

-- closed says whether lines may not go into chunk id (nil: the head): while the index is being
-- built, no line goes into a chunk it has still to count, so that a UNIQUE ADD that looked
-- through those (scriptCheck) and the index meanwhile has seen every line.
local function closed(id)
  readIndex()
  return state == 'building' and not index().counted(id)
end

-- fresh says that the head, empty, is a new chunk: lines that go there are counted like those of
-- any chunk made since the index's build began (meta "head" named the chunk it was).
local function fresh()
  readIndex()
  if state == 'building' then redis.call('HDEL', meta, 'head') end
end

-- pushBack appends lines in order; was: the index counted them (a lease's).
local function pushBack(lines, was)
  local i = 1
  while i <= #lines do
    local id, key = last()
    local room = CHUNK - redis.call('LLEN', key)
    if room == CHUNK and not id then fresh() end
    if room <= 0 or closed(id) then
      id = newChunk()
      redis.call('RPUSH', chunks, id)
      key, room = chunkKey(id), CHUNK
    end
    local part = {unpack(lines, i, math.min(i + room - 1, #lines))}
    redis.call('RPUSH', key, unpack(part))
    if id then addRest(#part) end
    arrived(part, id, was)
    i = i + #part
  end
end

-- pushFront puts lines at the front, in order (the first of them first).
local function pushFront(lines, was)
  local i = #lines
  while i >= 1 do
    local room = CHUNK - redis.call('LLEN', list)
    if room == CHUNK then fresh() end
    if room <= 0 or room < CHUNK and closed(nil) then
      demote()
      room = CHUNK
    end
    local part = {}
    for j = i, math.max(1, i - room + 1), -1 do part[#part + 1] = lines[j] end
    redis.call('LPUSH', list, unpack(part))
    arrived(part, nil, was)
    i = i - #part
  end
end

-- settle merges chunk id, which a removal left with size lines, into the chunk before it (the
-- head when it is the first) or after it, when it is under a quarter full and one has room: a
-- list whose middle RANDOM thinned keeps chunks that are mostly full, which RANDOM's pick counts
-- on. Not while the index is being built, which counts chunk by chunk.
local function settle(id, size)
  if size * 4 >= CHUNK then return end
  readIndex()
  if state == 'building' then return end
  local pos = redis.call('LPOS', chunks, id)
  if not pos then return end
  local key = chunkKey(id)
  local before = list
  if pos > 0 then before = chunkKey(redis.call('LINDEX', chunks, pos - 1)) end
  if redis.call('LLEN', before) + size <= CHUNK then
    push('RPUSH', before, redis.call('LRANGE', key, 0, -1))
    if pos == 0 then addRest(-size) end
  else
    local after = redis.call('LINDEX', chunks, pos + 1)
    if not after or redis.call('LLEN', chunkKey(after)) + size > CHUNK then return end
    push('LPUSH', chunkKey(after), reversed(redis.call('LRANGE', key, 0, -1)))
  end
  redis.call('DEL', key)
  redis.call('LREM', chunks, 1, id)
end

-- removeAt removes the line at index idx of chunk id (nil: the head; key its key, size its
-- length) and returns it; lend: it goes to a lease. The line is overwritten with the tombstone,
-- which LREM removes from the nearer end of the chunk.
local function removeAt(id, key, idx, size, lend)
  local line
  if idx == 0 then
    line = redis.call('LPOP', key)
  elseif idx == size - 1 then
    line = redis.call('RPOP', key)
  else
    line = redis.call('LINDEX', key, idx)
    redis.call('LSET', key, idx, tomb)
    if idx < size / 2 then redis.call('LREM', key, 1, tomb) else redis.call('LREM', key, -1, tomb) end
  end
  if id then addRest(-1) end
  left({line}, id, lend)
  if size > 1 then
    if id then settle(id, size - 1) end
  elseif id then
    redis.call('LREM', chunks, 1, id)
  else
    promote()
  end
  return line
end

-- random returns a generator of numbers in [0, 1) seeded by f in [0, 1) (Park-Miller): the
-- server draws f, since a script's own random numbers are the same at every call.
local function random(f)
  local x = math.floor(f * 2147483646) + 1
  return function()
    x = (x * 48271) % 2147483647
    return (x - 1) / 2147483646
  end
end

-- seek finds position pos (0 is the front, below the length): the chunk's index in the
-- directory (-1: the head), its key and the position in it, walking from the nearer end.
local function seek(pos)
  local size = redis.call('LLEN', list)
  if pos < size then return -1, list, pos end
  pos = pos - size
  local k, total = redis.call('LLEN', chunks), restOf()
  if pos < total / 2 then
    for from = 0, k - 1, 256 do
      for i, id in ipairs(redis.call('LRANGE', chunks, from, from + 255)) do
        local s = redis.call('LLEN', chunkKey(id))
        if pos < s then return from + i - 1, chunkKey(id), pos end
        pos = pos - s
      end
    end
  else
    local back = total - pos
    for to = k - 1, 0, -256 do
      local from = math.max(0, to - 255)
      local ids = redis.call('LRANGE', chunks, from, to)
      for i = #ids, 1, -1 do
        local s = redis.call('LLEN', chunkKey(ids[i]))
        if back <= s then return from + i - 1, chunkKey(ids[i]), s - back end
        back = back - s
      end
    end
  end
  return nil
end

-- removeRandom removes a line drawn uniformly, with rand, and returns it. A chunk is drawn
-- uniformly, then kept with the probability of its size over a bound of every chunk's size, and
-- a line drawn in it: every line is as likely, and with chunks mostly full a draw or two do.
local function removeRandom(rand, lend)
  local k = redis.call('LLEN', chunks)
  local size = redis.call('LLEN', list)
  if k == 0 then return removeAt(nil, list, math.floor(rand() * size), size, lend) end
  -- A list of an earlier version may hold more than CHUNK lines in its head, which ADDs at the
  -- front then make the first chunk, or in its last chunk.
  local bound = math.max(CHUNK, size, redis.call('LLEN', chunkKey(redis.call('LINDEX', chunks, 0))),
    redis.call('LLEN', chunkKey(redis.call('LINDEX', chunks, -1))))
  for _ = 1, 64 do
    local c = math.floor(rand() * (k + 1))
    local id, key, s = nil, list, size
    if c > 0 then
      id = redis.call('LINDEX', chunks, c - 1)
      key = chunkKey(id)
      s = redis.call('LLEN', key)
    end
    if rand() * bound < s then return removeAt(id, key, math.floor(rand() * s), s, lend) end
  end
  -- Sixty-four draws all missed (chunks nearly empty): the exact position, by a walk.
  local c, key, at = seek(math.floor(rand() * length()))
  local id = nil
  if c >= 0 then id = redis.call('LINDEX', chunks, c) end
  return removeAt(id, key, at, redis.call('LLEN', key), lend)
end

-- pick removes n lines one after the other at pos (F, L, or R with the fractions ARGV[from] to
-- ARGV[from + n - 1]) and returns them; or nil, then 1 (not loaded), 2 (empty) or 3 and the
-- list's length (too short). lend: they go to a lease.
local function pick(pos, n, from, lend)
  if not exists() then return nil, 1 end
  local size = length()
  if size == 0 then return nil, 2 end
  if n > size then return nil, 3, size end
  if pos == 'F' then return popFront(n, lend) end
  if pos == 'L' then return popBack(n, lend) end
  local picked = {}
  for i = 1, n do picked[i] = removeRandom(random(tonumber(ARGV[from + i - 1])), lend) end
  return picked
end

-- take removes line from chunk id ('' for the head), where FIND's scan saw it at index hint, and
-- returns whether it did. Lines come and go at the ends, so it looks from the chunk's front to a
-- little past hint; and a chunk may have become the head meanwhile. Otherwise another server
-- took it, or moved it: the scan goes on to its next hit.
local function take(line, id, hint, lend)
  local within = hint + 1 + ` + strconv.Itoa(takeSlack) + `
  local keys = {list}
  if id ~= '' then keys = {chunkKey(id), list} end
  for _, key in ipairs(keys) do
    local idx = redis.call('LPOS', key, line, 'MAXLEN', within)
    if idx then
      if key == list then id = nil end
      removeAt(id, key, idx, redis.call('LLEN', key), lend)
      return true
    end
  end
  return false
end

-- takeFirst takes the first of FIND's candidates still in the list, each taken as take would:
-- ARGV from first on, in threes (line, chunk id, index), in the scan's order. It returns the line
-- taken, or nil. Several a round trip, so that a FIND keeps ahead of readers consuming the lines
-- it saw: one a round trip, it fell behind them and walked the whole list.
local function takeFirst(first, lend)
  for j = first, #ARGV, 3 do
    if take(ARGV[j], ARGV[j + 1], tonumber(ARGV[j + 2]), lend) then return ARGV[j] end
  end
  return nil
end

-- emptied forgets the unique index with the last line the list holds, lent ones included.
local function emptied()
  readIndex()
  if state ~= 'none' and length() == 0 and lent() == 0 then dropIndex() end
end

-- consumed forgets lines taken for good: their returns (lease scripts) are forgotten, so that a
-- line added again later starts its count afresh. The index forgot them as they left.
local function consumed(lines, returned)
  emptied()
  if (returned or redis.call('EXISTS', returns)) == 0 then return end
  push('HDEL', returns, lines)
end

-- staged says whether the n lines of an upload are all in the chunks KEYS[3] lists: as many
-- chunks, the last with the rest. An upload writes the directory last, and Redis applies a
-- connection's writes in order, on its replicas too: a directory that arrived whole after a
-- failover tells that every chunk before it did.
local function staged(n)
  local k = math.ceil(n / CHUNK)
  if redis.call('LLEN', staging) ~= k then return false end
  if k == 0 then return true end
  return redis.call('LLEN', chunkKey(redis.call('LINDEX', staging, -1))) == n - (k - 1) * CHUNK
end

-- discard empties the list: its chunks go with the chores.
local function discard()
  if redis.call('EXISTS', chunks) == 1 then
    local trash = list .. ':trash:' .. newChunk()
    redis.call('RENAME', chunks, trash)
    chore('drop', trash)
  end
  redis.call('UNLINK', list)
  redis.call('HDEL', meta, 'rest')
  rest = 0
end

-- install makes the n lines staged the list's (empty until then): the first chunk becomes the
-- head, the staging directory the chunk directory, and the chores make the chunks permanent.
local function install(n)
  if n == 0 then return end
  local first = redis.call('LPOP', staging)
  redis.call('RENAME', chunkKey(first), list)
  redis.call('PERSIST', list)
  if redis.call('EXISTS', staging) == 1 then
    local keep = list .. ':keep:' .. newChunk()
    redis.call('COPY', staging, keep)
    redis.call('RENAME', staging, chunks)
    redis.call('PERSIST', chunks)
    chore('keep', keep)
  end
  addRest(n - redis.call('LLEN', list))
end

-- splice puts the n lines staged at the front (F) or the end (L), in their order: one chunk's
-- lines join the end chunks as ADDs would; more chunks join the directory as they are, to be
-- counted by the index's build if the list has an index.
local function splice(n, pos)
  if n == 0 then return end
  local ids = redis.call('LRANGE', staging, 0, -1)
  if n <= CHUNK then
    local key = chunkKey(ids[1])
    local lines = redis.call('LRANGE', key, 0, -1)
    redis.call('UNLINK', key, staging)
    if pos == 'F' then pushFront(lines, false) else pushBack(lines, false) end
    return
  end
  readIndex()
  if state ~= 'none' then
    if state == 'indexed' then
      -- Every lease is counted already.
      redis.call('HSET', meta, 'building', 'all', 'cursor', 'done')
      redis.call('HDEL', meta, 'sharded')
      state, since = 'building', nil
    end
    -- Lines came into chunks not counted: a UNIQUE ADD that looked for its line in those
    -- looks again (scriptCheck's generation).
    redis.call('HINCRBY', meta, 'generation', 1)
    redis.call('HSET', marks, string.match(ids[1], '^[^.]*'), 'p')
    push('RPUSH', todo, ids)
  end
  if pos == 'F' then
    demote()
    push('LPUSH', chunks, reversed(ids))
  else
    push('RPUSH', chunks, ids)
  end
  addRest(n)
  if redis.call('LLEN', list) == 0 then promote() end
  redis.call('PERSIST', staging)
  chore('keep', staging)
end

-- runChores does up to budget units of the chores, and says whether some are left.
local function runChores(budget)
  while budget > 0 do
    local task = redis.call('LINDEX', chores, 0)
    if not task then return false end
    local kind, key, tag, entry = cmsgpack.unpack(task)
    local n = math.min(budget, 200)
    if kind == 'unlease' then
      local ids = redis.call('HRANDFIELD', key, n)
      for _, id in ipairs(ids) do
        if id:sub(1, #tag) == tag then redis.call('DEL', entry .. id:sub(#tag + 1)) end
      end
      if #ids > 0 then redis.call('HDEL', key, unpack(ids)) end
      budget = budget - math.max(#ids, 1)
    else
      local ids = redis.call('LPOP', key, n) or {}
      local keys = {}
      for i, id in ipairs(ids) do keys[i] = chunkKey(id) end
      if #keys > 0 then
        if kind == 'drop' then
          redis.call('UNLINK', unpack(keys))
        else
          for _, k in ipairs(keys) do redis.call('PERSIST', k) end
        end
      end
      budget = budget - math.max(#ids, 1)
    end
    if redis.call('EXISTS', key) == 0 then redis.call('LPOP', chores) end
  end
  return redis.call('EXISTS', chores) == 1
end

local function notify(channel, name)
  redis.call('PUBLISH', channel, name)
end
`

// scriptReadBatch is READ and READMULTI: the reads of one list from one position (F, L or R)
// that a server received while its last batch was on its way (batch.go), or one read alone, each
// answered in its order as if it ran alone. ARGV: the position, keep (1/0), then for each read
// its n and its request's window (empty under none), then, under a request, its fingerprint (its
// outcome key is the next of KEYS[3...]), then for R its n fractions that seed the picks (chosen
// by the server in Go, since a script's own random numbers are the same on every call). Replies
// one flat array, each read's answer in turn: 0, the number of lines and the lines; 1 not
// loaded; 2 empty; 3 and the length, too short; 4 and an error's text (STSREUSED). Flat, because
// Redis turns each Lua table of a reply into RESP at a cost (a read's two nested tables cost
// more than its LPOP); and of strings and numbers only, which go-redis reads as a []string,
// without an interface value for each line (evalStrings). When the list holds the lines of every read not answered before, FIRST and LAST take
// them at once, as one read of them all would, and share them out in order: what the reads one
// after the other would have had, but for LAST with KEEP, which gives each read the same line,
// and for two reads of one request, the second of which must recall the first's answer.
var scriptReadBatch = plainRead + readBatch

// plainRead answers, before scriptReadBatch's prelude, the batch most reads make: FIRST or LAST
// with KEEP=FALSE and no request id, of a list whose head holds more lines than the batch takes
// and which has none of the keys its bookkeeping is for (a unique index, built or being built;
// leases; lines given back; lines on their way to the dead letters; for LAST, a chunk after the
// head). There, the prelude and the batch script do exactly this: read the list's keys (which
// checks their types), pop the lines in one command and share them out in order; plainRead does
// it without the closures of the prelude's functions and the reads' bookkeeping, which cost Redis
// more than the commands (BenchmarkReadBatchScript: plain1-us against batch1-us), and replies
// what the batch script replies. In any other state, a key of another type included, it has
// written nothing and leaves the batch to the rest of the script:
// TestPlainReadDoesWhatTheBatchScriptDoes runs both on each state and compares their replies
// and what they leave in Redis.
var plainRead = `
do
  local pos, total = ARGV[4], 0
  local plain = ARGV[5] == '0' and (pos == 'F' or pos == 'L')
  for a = 6, #ARGV, 2 do
    if not plain then break end
    plain = ARGV[a + 1] == ''
    total = total + tonumber(ARGV[a])
  end
  if plain then
    local list = KEYS[1]
    local meta = redis.pcall('HMGET', list .. ':meta', 'created', 'sharded', 'building')
    local head = redis.pcall('LLEN', list)
    local chunks = redis.pcall('LLEN', list .. ':chunks')
    if meta.err == nil and meta[1] and not meta[2] and not meta[3]
      and type(head) == 'number' and head > total
      and type(chunks) == 'number' and (pos == 'F' or chunks == 0)
      and redis.call('EXISTS', list .. ':dead', list .. ':unique', list .. ':leases', list .. ':returns') == 0 then
      local lines = redis.call(pos == 'F' and 'LPOP' or 'RPOP', list, total)
      local out, o, from = {}, 0, 0
      for a = 6, #ARGV, 2 do
        local n = tonumber(ARGV[a])
        out[o + 1], out[o + 2] = 0, n
        for j = 1, n do out[o + 2 + j] = lines[from + j] end
        o, from = o + 2 + n, from + n
      end
      return out
    end
  end
end
`

// readBatch is scriptReadBatch without its shortcut, plainRead.
var readBatch = prelude + `
open()
local headLength = sized(list, 'list')
sized(chunks, 'list')
-- Most lists have none of these keys: one EXISTS of them all spares a command for each.
local returned = 0
if redis.call('EXISTS', dead, counts, leases, returns) > 0 then
  sized(dead, 'list')
  sized(counts, 'hash')
  sized(leases, 'hash')
  returned = sized(returns, 'hash')
end
local pos, keep = ARGV[1], ARGV[2] == '1'
local once = pos ~= 'R' and not (keep and pos == 'L')
-- Read i wants ns[i] lines; under a request, ids[i] is its outcome key, windows[i] and prints[i]
-- its window and fingerprint; its fractions start at ARGV[at[i]].
local ns, ids, windows, prints, at, seen = {}, {}, {}, {}, {}, {}
local a, k = 3, 3
while a <= #ARGV do
  local i = #ns + 1
  ns[i], windows[i], a = tonumber(ARGV[a]), ARGV[a + 1], a + 2
  if windows[i] ~= '' then
    ids[i], prints[i], k, a = KEYS[k], ARGV[a], k + 1, a + 1
    if seen[ids[i]] then once = false end
    seen[ids[i]] = true
  end
  at[i] = a
  if pos == 'R' then a = a + ns[i] end
end
local out = {}
local function put(v) out[#out + 1] = v end
-- succeeded puts a read's lines[from + 1 .. from + n] in out, after 0 and their count.
local function succeeded(lines, from, n)
  put(0)
  put(n)
  for j = from + 1, from + n do put(lines[j]) end
end
-- failed puts a read's failure in out: its status, and the length when the list is too short.
local function failed(status, size)
  put(status)
  if size then put(size) end
end
-- give answers read i with lines[from + 1 .. from + n], recorded under its request.
local function give(i, lines, from, n)
  succeeded(lines, from, n)
  if windows[i] ~= '' then
    request, window, fingerprint = ids[i], windows[i], prints[i]
    -- A loop, not unpack: Lua's unpack fails past some 8000 values, after the lines were taken.
    local mine = {}
    for j = 1, n do mine[j] = lines[from + j] end
    done({0, mine})
  end
end
-- earlier is read i's reply recorded before under its request, or false.
local function earlier(i)
  return windows[i] ~= '' and recalled(ids[i], windows[i], prints[i]) or false
end
-- again answers with a reply recorded before: a read's nested reply, or an error, as text.
local function again(reply)
  if reply.err then
    put(4)
    put(reply.err)
  elseif reply[1] == 0 then
    succeeded(reply[2], 0, #reply[2])
  else
    failed(reply[1], reply[2])
  end
end
local function settle(picked)
  if keep then pushBack(picked, false) else consumed(picked, returned) end
end
-- alone answers read i on its own.
local function alone(i)
  local picked, status, size = pick(pos, ns[i], at[i], false)
  if not picked then return failed(status, size) end
  settle(picked)
  give(i, picked, 0, #picked)
end
-- known[i] is earlier(i), looked up before any read when once, else as read i's turn comes: a
-- read may recall the one before it.
local known = {}
if once then
  local lines = 0
  for i = 1, #ns do
    known[i] = earlier(i)
    if not known[i] then lines = lines + ns[i] end
  end
  if lines > 0 and exists() and lines <= headLength + restOf() then
    local all = pos == 'F' and popFront(lines, false) or popBack(lines, false)
    settle(all)
    local from = 0
    for i = 1, #ns do
      if known[i] then
        again(known[i])
      else
        give(i, all, from, ns[i])
        from = from + ns[i]
      end
    end
    return out
  end
end
for i = 1, #ns do
  if known[i] == nil then known[i] = earlier(i) end
  if known[i] then again(known[i]) else alone(i) end
end
return out
`

// scriptPage is the first page of FIND's scan: ARGV[1] lines of the head. Replies {0, lines} or
// {1} not loaded.
var scriptPage = prelude + `
if not exists() then return {1} end
return {0, redis.call('LRANGE', list, 0, tonumber(ARGV[1]) - 1)}
`

// scriptTake removes the first of the lines FIND's scan chose that is still there (takeFirst).
// ARGV: keep (1/0), then the candidates, in threes: line, the chunk's id (empty for the head), the
// line's index in it. Replies {0, line} taken (a recalled outcome's line may be another than the
// ones this scan chose), {1} all gone.
var scriptTake = prelude + `
local err = wrongType(returns, leases, dead)
if err then return err end
local line = takeFirst(2, false)
if not line then return {1} end
if ARGV[1] == '1' then pushBack({line}, false) else consumed({line}) end
return done({0, line})
`

// scriptAdd is ADD. ARGV: line, position (F or L), unique (1/0), the most lines a list may hold
// (0 for no limit), the notification channel, the list's name, the generation scriptCheck found
// the line in no chunk still to count in (empty for none), full. Replies {0, unregistered},
// {1, unregistered} duplicate, {2, unregistered} list full, {4, 0} no room for a new list, {5,
// unregistered} the unique index is not built: nothing done (the server looks for the line in
// what it has still to count, scriptCheck, or runs the build, scriptIndex). While the index is
// being built, a line that scriptCheck found in no chunk still to count, in this generation, is
// new if the index does not count it: chunks still to count only lose lines, which go where the
// index counts them (closed).
var scriptAdd = prelude + `
local err = wrongType(leases, dead)
if err then return err end
if noRoom() then return {4, 0} end
local line = ARGV[1]
local created = create()
if ARGV[3] == '1' then
  readIndex()
  local checked = ARGV[7] ~= '' and state == 'building'
    and redis.call('HGET', meta, 'cursor') == 'done'
    and ARGV[7] == (redis.call('HGET', meta, 'generation') or '0')
  if state ~= 'indexed' and not checked then
    if length() > 0 or lent() > 0 then return {5, created} end
    -- Nothing to count: the index starts here.
    dropIndex()
    index().start()
    redis.call('HSET', meta, 'sharded', '1')
    state = 'indexed'
  end
  if index().indexed(line) then return {1, created} end
end
local max = tonumber(ARGV[4])
if max > 0 and length() + lent() + 1 > max then return {2, created} end
if ARGV[2] == 'F' then pushFront({line}, false) else pushBack({line}, false) end
notify(ARGV[5], ARGV[6])
return done({0, created})
`

// scriptCheck looks for a line in the chunks the unique index's build has still to count, for a
// UNIQUE ADD that need not wait for the build: up to ARGV[3] lines of them a step, from the
// chunk at ARGV[2] of <list>:indexing, counted from its end (-1: the last; the build takes the
// chunks from its front, which leaves these positions be). ARGV: the line, the position, the
// budget. Replies {1} found (a duplicate, as the list was at that moment), {0, generation} in
// none of them, {2, the next position, generation} more to look at, {3} the index is not being
// built or the leases of before it are not counted yet, {4} a chunk longer than the budget (a
// list of an earlier version): the server runs the build instead. A chunk still to count only
// loses lines (closed), so a line not in it at one step is not in it at the next; a LOAD that
// brings chunks to count starts another generation, and the server looks again.
var scriptCheck = prelude + `
local err = wrongType()
if err then return err end
readIndex()
if state ~= 'building' or redis.call('HGET', meta, 'cursor') ~= 'done' then return {3} end
local generation = redis.call('HGET', meta, 'generation') or '0'
local line, pos, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local head = redis.call('HGET', meta, 'head')
while budget > 0 do
  -- The ids at pos and before, read a page at a time, from pos backwards.
  local ids = redis.call('LRANGE', todo, pos - 63, pos)
  if #ids == 0 then return {0, generation} end
  for j = #ids, 1, -1 do
    if budget <= 0 then break end
    local id = ids[j]
    if not index().counted(id) then
      local key = chunkKey(id)
      if id == head then key = list end
      local size = redis.call('LLEN', key)
      if size > tonumber(ARGV[3]) then return {4} end
      if redis.call('LPOS', key, line) then return {1} end
      budget = budget - math.max(size, 1)
    end
    pos = pos - 1
  end
end
return {2, pos, generation}
`

// scriptIndex is a step of the unique index's build: the first begins it (the head gets an id,
// the directory is copied as the chunks to count, the head first, the lines on their way to the
// dead letters are counted), each counts up to ARGV[1] lines (a chunk longer than that, from a
// list of an earlier version, is cut first), then the leases of before the build, a few at a
// time. Replies {0} built (or no list), {1} more to do, {2} the lines bound for the dead letters
// are too many to count in a step: the server moves them first.
var scriptIndex = prelude + `
local err = wrongType(leases, dead)
if err then return err end
if not exists() then return {0} end
local full = tonumber(ARGV[1])
local budget = full
readIndex()
if state == 'indexed' then return {0} end
if state == 'none' then
  if redis.call('LLEN', dead) > budget then return {2} end
  dropIndex()
  index().start()
  epoch = redis.call('HINCRBY', meta, 'epoch', 1)
  -- The head gets an id, to count it by, like the chunks of the directory.
  local head
  if redis.call('EXISTS', list) == 1 then head = newChunk() end
  since = tonumber(redis.call('HGET', meta, 'seq')) or 0
  if redis.call('EXISTS', chunks) == 1 then redis.call('COPY', chunks, todo) end
  if head then
    redis.call('LPUSH', todo, head)
    redis.call('HSET', meta, 'head', head)
  end
  index().count(redis.call('LRANGE', dead, 0, -1), 1)
  redis.call('HSET', meta, 'building', since)
  state = 'building'
end
if redis.call('HGET', meta, 'cursor') ~= 'done' then
  -- First the leases of before the build, a page a step: their lines count too. A UNIQUE ADD
  -- looks for its line in the chunks still to count only once they are (scriptCheck).
  local scan = redis.call('HSCAN', leases, redis.call('HGET', meta, 'cursor') or '0', 'COUNT', 100)
  local entries = scan[2]
  for i = 1, #entries, 2 do
    local max, lines, e, snap = cmsgpack.unpack(entries[i + 1])
    if e ~= epoch then
      index().count(lines, 1)
      redis.call('HSET', leases, entries[i], cmsgpack.pack(max, lines, epoch, snap))
    end
  end
  if scan[1] == '0' then redis.call('HSET', meta, 'cursor', 'done') else redis.call('HSET', meta, 'cursor', scan[1]) end
  return {1}
end
while budget > 0 do
  local id = redis.call('LPOP', todo)
  if not id then break end
  if not index().counted(id) then
    local atHead = redis.call('HGET', meta, 'head') == id
    local key = chunkKey(id)
    if atHead then key = list end
    local size = redis.call('LLEN', key)
    if size > budget and budget < full then
      -- For the next step.
      redis.call('LPUSH', todo, id)
      break
    end
    if size > budget then
      -- Longer than a step counts (a list of an earlier version): its first lines become a
      -- chunk of their own, counted, in front of it.
      local lines = redis.call('LPOP', key, budget)
      index().count(lines, 1)
      if atHead then
        redis.call('RENAME', list, chunkKey(id))
        redis.call('LPUSH', chunks, id)
        addRest(size - #lines)
        redis.call('RPUSH', list, unpack(lines))
        redis.call('HDEL', meta, 'head')
      else
        local fresh = newChunk()
        redis.call('RPUSH', chunkKey(fresh), unpack(lines))
        redis.call('LINSERT', chunks, 'BEFORE', id, fresh)
      end
      redis.call('LPUSH', todo, id)
      budget = 0
    else
      index().count(redis.call('LRANGE', key, 0, -1), 1)
      redis.call('HSET', marks, id, 'd')
      budget = budget - math.max(size, 1)
    end
  end
end
if redis.call('EXISTS', todo) == 1 then return {1} end
redis.call('HSET', meta, 'sharded', '1')
redis.call('HDEL', meta, 'building', 'head', 'cursor')
redis.call('UNLINK', todo, marks)
return {0}
`

// scriptEnsure creates an empty list. ARGV: full. Replies {0, unregistered}, {4, 0} no room for
// a new list.
var scriptEnsure = prelude + `
local err = wrongType()
if err then return err end
if noRoom() then return {4, 0} end
return {0, create()}
`

// scriptInsert is LOAD FIRST/LAST: the lines staged in the chunks KEYS[3] lists go to the front
// or the end, in their order (splice). ARGV: position (F or L), the most lines a list may hold,
// how many lines were staged, the notification channel, the list's name, full. Replies {0,
// unregistered}, {2, unregistered} list full, {3, 0} the staged lines are not all there (lost in
// a failover): nothing is changed; {4, 0} no room for a new list. The server deletes what was
// staged when the script did not take it.
var scriptInsert = prelude + `
local err = wrongType(staging)
if err then return err end
local n = tonumber(ARGV[3])
if not staged(n) then return {3, 0} end
if noRoom() then return {4, 0} end
local created = create()
local max = tonumber(ARGV[2])
if max > 0 and length() + lent() + n > max then return {2, created} end
splice(n, ARGV[1])
if n > 0 then notify(ARGV[4], ARGV[5]) end
return done({0, created})
`

// scriptReplace is INITFILE, LOAD REPLACE and the startup loads: the list becomes the lines
// staged (install; none staged: empty). ARGV: digest ("" for none), once (1: create the list only
// if it does not exist: a startup's load), the most lines a list may hold, how many lines were
// staged, the notification channel, the list's name, full. Replies {0, unregistered}, {1, 0,
// digest} kept, {2, 0} list full, {3, 0} the staged lines are not all there: nothing is changed;
// {4, 0} no room for a new list. The returns go with the lines they counted (a lease keeps those
// of its own lines).
var scriptReplace = prelude + `
local err = wrongType(returns, leases, staging)
if err then return err end
local digest = ARGV[1]
if ARGV[2] == '1' and exists() then return {1, 0, redis.call('HGET', meta, 'digest') or ''} end
local n = tonumber(ARGV[4])
if not staged(n) then return {3, 0} end
local max = tonumber(ARGV[3])
if max > 0 and n + lent() > max then return {2, 0} end
if noRoom() then return {4, 0} end
local created = create()
dropIndex()
discard()
install(n)
scrap(returns)
if digest == '' then redis.call('HDEL', meta, 'digest') else redis.call('HSET', meta, 'digest', digest) end
if n > 0 then notify(ARGV[5], ARGV[6]) end
return done({0, created})
`

// scriptReset is RESET. Replies {1} emptied, {0} no such list.
var scriptReset = prelude + `
if not exists() then return {0} end
local err = wrongType(returns)
if err then return err end
dropIndex()
discard()
scrap(returns)
return done({1})
`

// scriptChores does a step of the list's chores (see above), then of its garbage when no chore
// is left. ARGV: the chores' budget, the garbage's (members). Replies {1} while chores are left,
// {2} while garbage is, {0} when neither is.
var scriptChores = prelude + `
local err = wrongType()
if err then return err end
if runChores(tonumber(ARGV[1])) then return {1} end
if runGarbage(tonumber(ARGV[2])) then return {2} end
return {0}
`

// scriptLength is LENGTH. Replies {length}, or {-1} when there is no such list.
var scriptLength = prelude + `
if not exists() then return {-1} end
local err = wrongType()
if err then return err end
return {length()}
`

// scriptLines is SAVE and EXPORT of a list of one chunk: one consistent copy. Replies {0, lines},
// {1} not loaded, or {2} when the list is longer: the server reads it chunk by chunk.
var scriptLines = prelude + `
if not exists() then return {1} end
local err = wrongType()
if err then return err end
if redis.call('EXISTS', chunks) == 1 or redis.call('LLEN', list) > ` + strconv.Itoa(maxPage) + ` then return {2} end
return {0, redis.call('LRANGE', list, 0, -1)}
`

// scriptView is Page, the web page's view of a list: ARGV[1] lines from position ARGV[2], and the
// length. It walks the chunks from chunk ARGV[3] of the directory (-1: the head first), which
// starts at position ARGV[4], a bounded number of them: {0, length, lines} when it got there,
// or {2, length, the chunk to walk on from, its position} for the server to call again (a list
// of millions of lines, whose page then need not be of the same moment as its length). Replies
// {1} not loaded.
var scriptView = prelude + `
if not exists() then return {1} end
local err = wrongType()
if err then return err end
local n, first, c, base = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local len = length()
-- Bounded by the length first: an offset or count near 2^63 is a float in Lua, which LRANGE
-- refuses.
if n <= 0 or first >= len then return {0, len, {}} end
local key, at
if c < 0 then
  local size = redis.call('LLEN', list)
  if first < size then key, at = list, first else c, base = 0, size end
end
local walked = 0
while not key do
  local ids = redis.call('LRANGE', chunks, c, c + 255)
  if #ids == 0 then return {0, len, {}} end
  for _, id in ipairs(ids) do
    local size = redis.call('LLEN', chunkKey(id))
    if first < base + size then
      key, at = chunkKey(id), first - base
      break
    end
    c, base = c + 1, base + size
  end
  walked = walked + #ids
  if not key and walked >= ` + strconv.Itoa(viewWalk) + ` then return {2, len, c, base} end
end
local want, page = math.min(n, len - first), {}
while key and #page < want do
  for _, l in ipairs(redis.call('LRANGE', key, at, at + want - #page - 1)) do page[#page + 1] = l end
  if c < 0 then c = 0 else c = c + 1 end
  at = 0
  local id = redis.call('LINDEX', chunks, c)
  key = id and chunkKey(id)
end
return {0, len, page}
`

// The lease scripts (lease.go) begin with leasePrelude. ARGV[1] and ARGV[2] are the notification
// channel and the list's name, then each script's own. Their time is Redis' (TIME, replicated as
// the script's effects), so that every server agrees on when a lease runs out.
//
// leases holds the running leases (id -> cmsgpack of max deliveries, lines, the index's epoch
// when they are counted in it, and the returns of each line when it was taken, which a RESET does
// not take from it), expires their expiries (a sorted set of ids, by Unix ms), returns the
// returns per line value of the lines in the list, ended the leases that ended without an
// acknowledgement ("<how>:<id>", by when to forget them: an entry whose time has passed is
// forgotten, whether or not it was removed yet), dead the lines bound for the dead-letter list
// (scriptDeadLetters), and KEYS[3], when the lease is named by its id, the lease's index entry
// (keys.go: in the list's slot, since the id carries the slot's tag). The meta hash counts
// "leased" lines (those of leases and dead), "returned" and "deadLettered" ones, and keeps
// "due", when the list next needs the expiry loop.
//
// Every lease script first gives back the lines of the leases that have run out (expire, up to
// expiryBatch of them: the expiry loop comes back at once for the others, and a lease named by a
// script that ran out meanwhile ends there), and replies through reply: {status, due, earlier,
// dead, ...}, where due is when the list next needs the expiry loop (-1: never), earlier 1 when
// that is earlier than the time recorded before (the server then tells the loop's schedule,
// which is in another slot), and dead 1 when lines went to dead, on their way to the dead
// letters.
//
// Key types. The hot scripts (a leased read or take, an Ack) do not check each key's type with
// TYPE: before their first write, every key they write has been read by a command that fails on
// a key of the wrong type (expires by expire's ZRANGEBYSCORE, meta by readDue or finish's HMGET,
// leases by HEXISTS or locate's HGET, the list by LLEN or LPOS), or is the first they write, so
// a wrong type stops them before they change anything. Whatever writes more keys (expiry,
// release, RANDOM, the unique index) calls checkTypes first.
var leasePrelude = prelude + `
local channel, name = ARGV[1], ARGV[2]
-- indexEntry is the lease's index entry (KEYS[3]), when the lease is named by its id.
local indexEntry = staging
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local memory = ` + strconv.FormatInt(store.LeaseMemory.Milliseconds(), 10) + `
-- brought: lines came back to the list; lowest: the earliest time this script made the list due
-- (a new expiry, dead letters now, more leases run out); condemned: lines went to the dead
-- letters; due: meta's "due" as read (dueRead), checked: checkTypes ran.
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

-- forget drops some of the ended leases whose memory ran out (the others are forgotten all the
-- same: locate compares their time).
local function forget()
  local old = redis.call('ZRANGEBYSCORE', ended, '-inf', now, 'LIMIT', 0, 64)
  if #old > 0 then redis.call('ZREM', ended, unpack(old)) end
end

-- snapshot is the returns of lines, just taken from the list, or nil when no line of the list
-- ever came back (returned: meta's "returned").
local function snapshot(lines, returned)
  if (tonumber(returned) or 0) == 0 then return nil end
  local snap = {}
  for i, v in ipairs(redis.call('HMGET', returns, unpack(lines))) do snap[i] = tonumber(v) or 0 end
  return snap
end

-- hold puts lines, just taken from the list (with snap, their returns), under lease id for ttl
-- ms, indexes it, and returns its expiry.
local function hold(id, lines, ttl, max, snap)
  readIndex()
  local e = -1
  if state ~= 'none' then e = epoch end
  local expiry = now + ttl
  redis.call('HSET', leases, id, cmsgpack.pack(max, lines, e, snap))
  redis.call('ZADD', expires, expiry, id)
  redis.call('HINCRBY', meta, 'leased', #lines)
  redis.call('SET', indexEntry, name, 'PX', ttl + memory)
  lower(expiry)
  return expiry
end

-- finish ends lease id (packed: its entry, when read already), or only its line at index at, and
-- returns an error reply or nil. Acknowledged ('acked'), the lines are consumed: the script's
-- first write, after checks of meta (here) and of the lease's keys (expire, locate). Otherwise
-- ('expired', 'released'), after checkTypes, each line's return is counted, and it goes back to
-- the list at pos (F or L, keeping the lease's order) or, once it has come back max deliveries
-- times, to dead, on its way to the dead letters: still counted as leased until it is there.
local function finish(id, how, pos, at, packed)
  packed = packed or redis.call('HGET', leases, id)
  if not packed then
    -- The lease's entry is gone (its hash deleted by hand, or evicted), and its lines with it:
    -- forget its expiry, rather than fail on it at every expiry for ever.
    redis.call('ZREM', expires, id)
    return nil
  end
  local max, lines, e, snap = cmsgpack.unpack(packed)
  local was = index().leaseCounted(e)
  local gone, goneSnap = lines, snap
  if at then
    gone = {table.remove(lines, at)}
    if snap then goneSnap = {table.remove(snap, at)} end
  end
  if how == 'acked' then
    local returned = redis.call('HGET', meta, 'returned')
    if was then
      -- The unique index is written, and emptied reads more keys.
      local err = checkTypes()
      if err then return err end
    end
    -- Only lines that went back have their returns counted: none if none ever did.
    if (tonumber(returned) or 0) > 0 then push('HDEL', returns, gone) end
  end
  if at and #lines > 0 then
    redis.call('HSET', leases, id, cmsgpack.pack(max, lines, e, snap))
  else
    if how ~= 'acked' then
      local expiry = tonumber(redis.call('ZSCORE', expires, id))
      forget()
      redis.call('ZADD', ended, math.min(now, expiry) + memory, how .. ':' .. id)
    end
    redis.call('HDEL', leases, id)
    redis.call('ZREM', expires, id)
  end
  if how == 'acked' then
    redis.call('HINCRBY', meta, 'leased', -#gone)
    if was then index().count(gone, -1) end
    emptied()
    return nil
  end
  local back = {}
  for i, l in ipairs(gone) do
    local returned = math.max(tonumber(redis.call('HGET', returns, l)) or 0, goneSnap and goneSnap[i] or 0) + 1
    if max > 0 and returned >= max then
      redis.call('HDEL', returns, l)
      redis.call('RPUSH', dead, l)
      -- Lines bound for the dead letters are counted by the index.
      if state ~= 'none' and not was then index().count({l}, 1) end
      condemned = true
      lower(now)
    else
      redis.call('HSET', returns, l, returned)
      back[#back + 1] = l
    end
  end
  if #back == 0 then return nil end
  redis.call('HINCRBY', meta, 'leased', -#back)
  redis.call('HINCRBY', meta, 'returned', #back)
  if pos == 'F' then pushFront(back, was) else pushBack(back, was) end
  brought = true
  return nil
end

-- expire gives back the lines of the leases that have run out, at the front, the earliest
-- lease's first (it was read first), up to expiryBatch of them. It returns an error reply or
-- nil; with nothing run out it only reads (and so checks) the expiries.
local function expire()
  local over = redis.call('ZRANGEBYSCORE', expires, '-inf', now, 'LIMIT', 0, ` + strconv.Itoa(expiryBatch) + `)
  if #over == 0 then return nil end
  local err = checkTypes()
  if err then return err end
  for i = #over, 1, -1 do finish(over[i], 'expired', 'F') end
  if #over == ` + strconv.Itoa(expiryBatch) + ` then lower(now) end
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
-- given, acknowledged, forgotten, or of another list; 'overdue' when it ran out and expire left
-- it for later). By line, it looks at the leases that expire first, up to a thousand of them.
local function locate(id, line)
  if id ~= '' then
    local packed = redis.call('HGET', leases, id)
    if packed then
      local expiry = tonumber(redis.call('ZSCORE', expires, id))
      if expiry and expiry <= now then return nil, nil, nil, 'overdue' end
      return id, nil, packed
    end
    local forget = redis.call('ZMSCORE', ended, 'expired:' .. id, 'released:' .. id)
    for i, how in ipairs({'expired', 'released'}) do
      if forget[i] and tonumber(forget[i]) > now then return nil, nil, nil, how end
    end
    return nil
  end
  for from = 0, 1023, 64 do
    local ids = redis.call('ZRANGEBYSCORE', expires, '(' .. now, '+inf', 'LIMIT', from, 64)
    if #ids == 0 then return nil end
    for _, lid in ipairs(ids) do
      local packed = redis.call('HGET', leases, lid)
      if packed then
        local _, lines = cmsgpack.unpack(packed)
        for i, l in ipairs(lines) do
          if l == line then return lid, i, packed end
        end
      end
    end
  end
  return nil
end

-- overdue ends lease id, which ran out and which expire left for later, as its expiry would
-- have; it returns an error reply or nil.
local function overdue(id)
  local err = checkTypes()
  if err then return err end
  return finish(id, 'expired', 'F')
end

-- elsewhere is the list that the index entry names when it is not this one: the lease named by
-- id, not found here, may be another list's (the server was told the wrong list).
local function elsewhere()
  if not indexEntry then return nil end
  local owner = redis.pcall('GET', indexEntry)
  if type(owner) == 'string' and owner ~= name then return owner end
  return nil
end

-- reply ends every lease script: it wakes the reads waiting on the list if lines came back,
-- records when the list next needs the expiry loop, and replies. The loop's visit (exact) records
-- the truth (now while dead letters wait or chores are left), and forgets some ended leases whose
-- memory ran out; a change records only an earlier time than the one recorded, which is never
-- later than what the list holds (a change only lowers it), so the time this change set (lowest)
-- is all it compares: the schedule holds the one recorded before until the loop's next visit,
-- and an early visit costs less than a report for each lease of a list whose leases come and go.
local function reply(status, exact, ...)
  if brought then notify(channel, name) end
  local when, waiting = lowest, condemned
  if exact then
    forget()
    waiting = redis.call('LLEN', dead) > 0
    if waiting or redis.call('EXISTS', chores) == 1 then
      when = now
    else
      when = tonumber(redis.call('ZRANGE', expires, 0, 0, 'WITHSCORES')[2])
      if lowest and (not when or lowest < when) then when = lowest end
      -- Garbage left: a visit a second (the server that visits empties it in the background).
      if (not when or when > now + 1000) and redis.call('EXISTS', garbage) == 1 then when = now + 1000 end
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

// scriptReadLeased is READ with a lease. KEYS[3]: the lease's index entry. ARGV: channel, name,
// position, n, the lease's id, ttl (ms), max deliveries, then for R the fractions (scriptReadBatch's).
// Replies answer(0, expiry, lines, id) (a recalled outcome's id is another than the one this call
// chose), or a read's failures (scriptReadBatch) through answer: 1, 2, or 3 and the length. Before its first
// write it has read every key it writes (HEXISTS the leases, LLEN the chunk directory, HLEN the
// returns when lines ever came back), so that a key of the wrong type stops it first.
var scriptReadLeased = leasePrelude + `
local err = expire()
if err then return err end
local pos, n = ARGV[3], tonumber(ARGV[4])
local info = redis.call('HMGET', meta, 'created', 'due', 'returned')
readDue(info[2])
if not info[1] then return answer(1) end
redis.call('HEXISTS', leases, ARGV[5])
redis.call('LLEN', chunks)
if (tonumber(info[3]) or 0) > 0 then redis.call('HLEN', returns) end
readIndex()
if pos == 'R' or state ~= 'none' then
  err = checkTypes()
  if err then return err end
end
local picked, status, size = pick(pos, n, 8, true)
if not picked then return answer(status, size) end
local expiry = hold(ARGV[5], picked, tonumber(ARGV[6]), tonumber(ARGV[7]), snapshot(picked, info[3]))
return answer(0, expiry, picked, ARGV[5])
`

// scriptTakeLeased takes the first of the lines FIND's scan chose that is still there under a
// lease (takeFirst). KEYS[3]: the lease's index entry. ARGV: channel, name, the lease's id, ttl
// (ms), max deliveries, then the candidates in threes as scriptTake's. Replies answer(0, expiry,
// line, id), answer(1) all gone.
var scriptTakeLeased = leasePrelude + `
local err = expire()
if err then return err end
local info = redis.call('HMGET', meta, 'due', 'returned')
readDue(info[1])
redis.call('HEXISTS', leases, ARGV[6])
redis.call('LLEN', chunks)
if (tonumber(info[2]) or 0) > 0 then redis.call('HLEN', returns) end
readIndex()
if state ~= 'none' then
  err = checkTypes()
  if err then return err end
end
local line = takeFirst(6, true)
if not line then return answer(1) end
local expiry = hold(ARGV[3], {line}, tonumber(ARGV[4]), tonumber(ARGV[5]), snapshot({line}, info[2]))
return answer(0, expiry, line, ARGV[3])
`

// scriptEnd is Ack and Release. KEYS[3], with an id: the lease's index entry, which an Ack
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
if ended == 'overdue' then
  err = overdue(ARGV[3])
  if err then return err end
  ended = 'expired'
end
if id then
  err = finish(id, how, ARGV[6], at, packed)
  if err then return err end
  if how == 'acked' and indexEntry then redis.call('DEL', indexEntry) end
  return answer(0)
end
if ended and how == 'released' then return answer(0) end
if ended then return answer(2, ended) end
local owner = elsewhere()
if owner then return answer(3, owner) end
return answer(1)
`

// scriptExtend is Extend. KEYS[3], with an id: the lease's index entry, which lives on
// LeaseMemory past the new expiry. ARGV: channel, name, the lease's id (empty for one by line),
// the line, ttl (ms). Replies answer(0, id, expiry), or scriptEnd's failures.
var scriptExtend = leasePrelude + `
local err = expire()
if err then return err end
local id, _, _, how = locate(ARGV[3], ARGV[4])
if how == 'overdue' then
  err = overdue(ARGV[3])
  if err then return err end
  how = 'expired'
end
if how then return answer(2, how) end
if not id then
  local owner = elsewhere()
  if owner then return answer(3, owner) end
  return answer(1)
end
readDue()
local expiry = now + tonumber(ARGV[5])
redis.call('ZADD', expires, expiry, id)
if indexEntry then redis.call('PEXPIREAT', indexEntry, expiry + memory) end
lower(expiry)
return answer(0, id, expiry)
`

// scriptReload is RELOAD: the list becomes the lines staged (scriptReplace), and every running
// lease of the list ends as an Ack of it would, in the same step, so that no line of the content
// replaced comes back, from a lease taken before the reload or while its lines were being
// uploaded. The leases' hash goes whole to the chores, which delete their index entries (an entry
// whose lease is gone answers ErrLeaseNotFound meanwhile); their lines are consumed (their unique
// counts and returns go with the content), "leased" drops by them, and their expiries go. Lines
// waiting in dead are no lease's any more: they stay there, still counted in "leased", until
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
local n = tonumber(ARGV[7])
if not staged(n) then return {3, 0} end
local gone = lent() - redis.call('LLEN', dead)
local max = tonumber(ARGV[6])
if max > 0 and n + lent() - gone > max then return {2, 0} end
if noRoom() then return {4, 0} end
local created = create()
if redis.call('EXISTS', leases) == 1 then
  local trash = list .. ':trash:' .. newChunk()
  redis.call('RENAME', leases, trash)
  chore('unlease', trash, ARGV[3], ARGV[4])
end
scrap(expires)
scrap(returns)
if gone > 0 then redis.call('HINCRBY', meta, 'leased', -gone) end
dropIndex()
discard()
install(n)
if n > 0 then brought = true end
local digest = ARGV[5]
if digest == '' then redis.call('HDEL', meta, 'digest') else redis.call('HSET', meta, 'digest', digest) end
return done(reply(0, true, created, gone))
`

// scriptExpire is the expiry loop's visit: begin does it all, and a step of the chores, or of the
// garbage when no chore is left. ARGV: channel, name. Replies reply(0, 1 when garbage is left, else
// 0), with the list's true due time.
var scriptExpire = leasePrelude + `
local err = begin()
if err then return err end
local garbageLeft = false
if not runChores(` + strconv.Itoa(choreBudget) + `) then garbageLeft = runGarbage(SCRAP) end
return reply(0, true, garbageLeft and 1 or 0)
`

// scriptDeadLetters moves the lines waiting in dead to the dead-letter list, a batch at a time:
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
local owner, claimed = string.match(redis.call('HGET', meta, 'deadClaim') or '', '^(%S+) (%d+)$')
local mine = owner == token
if moved > 0 then
  if not mine then return answer(1) end
  local lines = redis.call('LRANGE', dead, 0, moved - 1)
  redis.call('LTRIM', dead, moved, -1)
  redis.call('HINCRBY', meta, 'leased', -moved)
  redis.call('HINCRBY', meta, 'deadLettered', moved)
  readIndex()
  if state ~= 'none' then index().count(lines, -1) end
  emptied()
end
if redis.call('LLEN', dead) == 0 then
  if mine then redis.call('HDEL', meta, 'deadClaim') end
  return answer(0)
end
if owner and not mine and now - tonumber(claimed) < tonumber(ARGV[6]) then return answer(2) end
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
