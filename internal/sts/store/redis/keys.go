package redis

// keys are the Redis keys of one list. Its lines are in chunks of at most chunkLines lines, each
// a LIST, in order (scripts.go): the first is the list's own key, so that a list of up to
// chunkLines lines is one plain LIST that redis-cli LRANGE, or the jpgc "Redis Data Set" config
// element, see as the table servers do; the ids of the others are listed, in order, in
// <list>:chunks, and each is <list>:c:<id>. Its companions are the list's key with a suffix, so
// they share its hash tag, {name}, and a script touching all of them runs on Redis Cluster,
// where the tag picks the shard. The scripts are given the list's key alone and name its
// companions themselves (scripts.go): a request does not build ten keys.
//
//   - <list>:meta: existence, digest, the unique index's state, counters;
//   - <list>:unique:0 to :31: the unique index (line -> count), once a unique ADD needed it;
//   - <list>:chores: what changes left to do in steps; <list>:garbage: the big structures they
//     dropped (each renamed to <list>:trash:<n>), to empty in steps;
//   - the leases (lease.go): <list>:leases (id -> its max deliveries, lines and more, cmsgpack),
//     <list>:expires (id -> expiry, Unix ms by Redis' clock), <list>:returns (line -> how many
//     times a lease gave it back), <list>:ended ("<how>:<id>" of the leases that ended without
//     an acknowledgement -> when to forget them), <list>:dead (the lines on their way to the
//     dead-letter list, which lives in another slot);
//   - a bulk change is uploaded into chunks listed in <list>:staging:<random> first (bulk in
//     redis.go); the scripts keep <list>:indexing, <list>:marks, <list>:trash:<n> and
//     <list>:keep:<n> for the work they cut into steps.
type keys struct {
	list  string // <prefix>{<name>}: the first chunk of lines
	boxed any    // list, as a command's argument
}

// keysOf returns the keys of list name. Those of the last keyCacheSize names are kept, so that a
// request makes none.
func (s *Store) keysOf(name string) keys {
	s.keysMu.RLock()
	k, ok := s.keyCache[name]
	s.keysMu.RUnlock()
	if ok {
		return k
	}
	tag := name
	if tag == "" || tag[0] == '}' {
		// "{}" would be an empty tag, which hashes each whole key and scatters the list's keys
		// over the shards. The protocol's names are UTF-8 (FILENAME is decoded as such), which
		// never holds 0xFF, so these keys stay apart from every other name's.
		tag = noTag + tag
	}
	list := s.prefix + "{" + tag + "}"
	k = keys{list: list, boxed: list}
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	if len(s.keyCache) >= keyCacheSize || s.keyCache == nil {
		s.keyCache = make(map[string]keys, keyCacheSize)
	}
	s.keyCache[name] = k
	return k
}

// keyCacheSize is how many names' keys keysOf keeps (about 200 bytes each, and the names).
const keyCacheSize = 4096

func (k keys) meta() string   { return k.list + ":meta" }
func (k keys) chunks() string { return k.list + ":chunks" }
func (k keys) chores() string { return k.list + ":chores" }

// garbage lists the trash keys of the structures a change dropped, which the chores empty in
// steps (scripts.go).
func (k keys) garbage() string { return k.list + ":garbage" }

// chunk is the key of the chunk id of the list (scripts.go's chunkKey).
func (k keys) chunk(id string) string { return k.list + ":c:" + id }

// noTag starts the tag of a name that cannot be a hash tag by itself.
const noTag = "\xff"

// registry is the set of every list's name: STATUS reads it instead of scanning the keyspace.
// It lives in a slot of its own, so it is written outside the lists' scripts, once, by the
// server that created the list.
func (s *Store) registry() string { return s.prefix + "lists" }

// channel carries the name of a list that lines were brought to, so that reads waiting on any
// server try again.
func (s *Store) channel() string { return s.prefix + "added" }

// The keys below start with a letter after the prefix, never with the "{" of a list's keys.

// dueLists is the expiry loop's schedule (lease.go): a sorted set of the names of the lists
// whose leases or dead letters need it, by when (Unix ms by Redis' clock). It is a hint kept by
// the servers, in a slot of its own; each list's own keys hold the truth.
func (s *Store) dueLists() string { return s.prefix + "leases-due" }

// leaseIndex names the list that holds lease id, so that the id alone finds it. It expires
// store.LeaseMemory after the lease. Its hash tag is the id's first tagLen characters, which put
// an id of this store in its list's slot (slots.go), where the lease scripts write it.
func (s *Store) leaseIndex(id string) string {
	n := min(len(id), tagLen)
	return s.prefix + "lease:{" + id[:n] + "}" + id[n:]
}

// requestKey binds a client's request id to its fingerprint (BindRequest), for the request's
// window.
func (s *Store) requestKey(id string) string { return s.prefix + "request:" + id }

// outcomeKey holds the outcome of the change made under request id (store.Request) in the slot of
// tag: that of the list changed, whose scripts write it in the same step as the change. A lease's
// id starts with that tag (slots.go), so that an ACK naming the lease alone finds it too.
func (s *Store) outcomeKey(tag, id string) string {
	return s.prefix + "outcome:{" + tag + "}" + id
}
