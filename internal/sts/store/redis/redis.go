// Package redis is the Redis/Valkey backend of the table server: every list lives in one Redis
// LIST key, and any number of table servers share them with the same consume-once guarantee as
// one server's memory store. Each change is one Lua script run atomically by Redis (scripts.go),
// FIND scans pages in Go (the Java-flavoured regular expressions cannot run in Redis) and removes
// its hit with a script that checks the line is still there, and reads that WAIT are woken by a
// notification channel that every change bringing lines publishes to (wait.go).
package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Options configure a Store.
type Options struct {
	// Client is the connection to Redis (standalone, Sentinel or Cluster); the Store closes it.
	Client goredis.UniversalClient
	// KeyPrefix starts every key the Store writes, so that several resources share one Redis.
	KeyPrefix string
	// MinReplicas, when above 0, acknowledges a change only once that many replicas hold it
	// (Redis WAIT, within ReplicaTimeout); fewer is store.ErrNotRecorded. Not with Cluster.
	MinReplicas    int
	ReplicaTimeout time.Duration
	// Limits are checked by the scripts (lines per list) and before a line is sent (line bytes);
	// MaxTotalBytes is Redis' own maxmemory's business and must be 0. MaxLists counts the
	// registry, the set of every list's name, which lives in a slot of its own: each server
	// keeps the count it last saw (after each list it creates, at each health check, at each
	// STATUS) and a script refuses to create a list while that count is at the limit, after one
	// fresh look. A server whose count is behind (other servers created lists since) may
	// therefore overshoot the limit by the creations it starts before its count catches up: the
	// creations it has in flight at that moment, since each one reads the count afresh. A few
	// lists per server, never a runaway; the memory backend holds the limit exactly.
	Limits store.Limits
	// Log receives the backend's failures, which answers do not show, and its ups and downs.
	Log *slog.Logger
	// HealthInterval is how often the connection is checked (Up); 0 is one second.
	HealthInterval time.Duration
}

// Store is the Redis backend of store.Store. Create it with New.
type Store struct {
	client   goredis.UniversalClient // connections: pub/sub, health, acknowledged writes
	cmd      goredis.UniversalClient // autopipelined: the many small commands of concurrent clients
	prefix   string
	keysMu   sync.RWMutex
	keyCache map[string]keys // keysOf's
	replicas int
	replWait time.Duration
	limits   store.Limits
	log      *slog.Logger
	tombArg  any // what a removal from a chunk's middle overwrites its line with before LREM (scripts.go)
	observer *observer

	lists      atomic.Int64 // the registry's size, as last seen (Limits.MaxLists)
	up         atomic.Bool
	subscribed atomic.Bool // the notification channel is listened to (wait.go)
	waits      waits
	batches    readBatches     // readBatched's
	bindings   recentBindings  // BindRequest's
	due        chan struct{}   // wakes the expiry loop: a change reported a due time before wake (lease.go)
	background context.Context // ends when the store closes: the work no request waits for
	buildingMu sync.Mutex
	building   map[string]bool // the background jobs this process runs, by job and list (inBackground)
	closing    bool            // Close began: no job starts (buildingMu)
	wake       atomic.Int64    // when the expiry loop looks at the schedule next (Unix ms, Redis' clock)
	stop       context.CancelFunc
	stopped    sync.WaitGroup
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Health = (*Store)(nil)
)

// The scripts, loaded once per Redis by SHA (EVAL on NOSCRIPT, eval).
var (
	readBatchScript = newScript(scriptReadBatch)
	pageScript      = newScript(scriptPage)
	takeScript      = newScript(scriptTake)
	addScript       = newScript(scriptAdd)
	indexScript     = newScript(scriptIndex)
	checkScript     = newScript(scriptCheck)
	ensureScript    = newScript(scriptEnsure)
	insertScript    = newScript(scriptInsert)
	replaceScript   = newScript(scriptReplace)
	resetScript     = newScript(scriptReset)
	choresScript    = newScript(scriptChores)
	lengthScript    = newScript(scriptLength)
	linesScript     = newScript(scriptLines)
	viewScript      = newScript(scriptView)

	readLeasedScript  = newScript(scriptReadLeased)
	takeLeasedScript  = newScript(scriptTakeLeased)
	endScript         = newScript(scriptEnd)
	extendScript      = newScript(scriptExtend)
	reloadScript      = newScript(scriptReload)
	expireScript      = newScript(scriptExpire)
	deadLettersScript = newScript(scriptDeadLetters)
	scheduleScript    = newScript(scriptSchedule)
	dueListsScript    = newScript(scriptDueLists)
	recallScript      = newScript(scriptRecall)
)

// luaScript is a script with its SHA and source boxed once, for eval.
type luaScript struct {
	*goredis.Script
	sha, src any
}

// newScript is the script of src, less the functions it cannot reach (shake).
func newScript(src string) *luaScript {
	src = shake(src)
	sc := goredis.NewScript(src)
	return &luaScript{Script: sc, sha: sc.Hash(), src: src}
}

// New returns a Store on o.Client. It does not wait for Redis: Up says when it answers, and
// calls fail with store.ErrUnavailable until then.
func New(o Options) (*Store, error) {
	if o.Limits.MaxTotalBytes > 0 {
		return nil, errors.New("max-total-bytes does not apply to Redis: set maxmemory on the Redis server")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = time.Second
	}
	if o.ReplicaTimeout <= 0 {
		o.ReplicaTimeout = 2 * time.Second
	}
	obs := &observer{}
	o.Client.AddHook(obs)
	cmd, err := o.Client.AutoPipeline()
	if err != nil {
		return nil, fmt.Errorf("redis autopipelining: %w", err)
	}
	tomb := make([]byte, 16)
	_, _ = rand.Read(tomb)
	s := &Store{
		client: o.Client, cmd: cmd, prefix: o.KeyPrefix, replicas: o.MinReplicas, replWait: o.ReplicaTimeout,
		limits: o.Limits, log: o.Log, observer: obs, tombArg: "\x00sts-removed-" + hex.EncodeToString(tomb),
		due: make(chan struct{}, 1),
	}
	s.waits.init()
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.background = cancel, ctx
	s.stopped.Add(3)
	go s.watchHealth(ctx, o.HealthInterval)
	go s.listen(ctx)
	go s.expireLeases(ctx)
	return s, nil
}

// Name implements store.Health.
func (s *Store) Name() string { return "redis" }

// Up implements store.Health: whether Redis answered the last health check (and this server
// listens to the notifications that wake waiting reads).
func (s *Store) Up() bool { return s.up.Load() && s.subscribed.Load() }

// watchHealth pings Redis every interval and logs each change of state once.
func (s *Store) watchHealth(ctx context.Context, interval time.Duration) {
	defer s.stopped.Done()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	first := true
	for {
		pingCtx, cancel := context.WithTimeout(ctx, interval)
		err := s.client.Ping(pingCtx).Err()
		cancel()
		if ctx.Err() != nil {
			return
		}
		up := err == nil
		if up && s.limits.MaxLists > 0 {
			s.countLists(ctx)
		}
		if was := s.up.Swap(up); was != up || first && !up {
			if up {
				s.log.Info("Redis reachable")
			} else {
				s.log.Error("Redis unreachable; requests get 503 until it answers", "error", err)
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.EndWaits()
	s.buildingMu.Lock()
	s.closing = true
	s.buildingMu.Unlock()
	s.stop()
	s.stopped.Wait()
	return s.client.Close()
}

// runList runs a script of list k (scripts.go) made under request r (nil: none): KEYS are the
// list's key, r's outcome key, then extra (a staging directory, a lease's index entry); ARGV r's
// window and fingerprint, the tombstone, then args. The command's arguments are made in one
// slice, the list's key boxed once (a READ's allocations are most of what it costs the server).
func (s *Store) runList(ctx context.Context, sc *luaScript, k keys, r *store.Request, extra []string, changes bool, args ...any) ([]any, error) {
	argv := make([]any, 5, 5+len(extra)+3+len(args))
	outcome, window, fingerprint := s.outcomeArgs(k, r)
	argv[2], argv[3], argv[4] = 2+len(extra), k.boxed, outcome
	for _, key := range extra {
		argv = append(argv, key)
	}
	argv = append(argv, window, fingerprint, s.tombArg)
	return s.eval(ctx, sc, changes, append(argv, args...))
}

// outcomeArgs are what a script of list k is given of request r: the key of its outcome, its
// window and its fingerprint; under no request, the list's key (never read) and "" twice.
func (s *Store) outcomeArgs(k keys, r *store.Request) (key, window, fingerprint any) {
	if r == nil {
		return k.boxed, "", ""
	}
	return s.outcomeKey(slotTags()[slot(k.list)], r.ID), max(r.Window.Milliseconds(), 1), r.Fingerprint
}

// recalled returns the outcome recorded for r in the slot of tag (nil when r is), or nil: a
// change that could fail before its script runs (a FIND whose scan no longer finds the line, an
// ACK of a lease whose index entry went with it) looks first.
func (s *Store) recalled(ctx context.Context, tag string, r *store.Request) ([]any, error) {
	if r == nil {
		return nil, nil
	}
	reply, err := s.run(ctx, recallScript, []string{s.outcomeKey(tag, r.ID)}, false, max(r.Window.Milliseconds(), 1), r.Fingerprint)
	if err != nil || len(reply) == 0 {
		return nil, err
	}
	return reply, nil
}

// requestOf returns the Request ctx carries, or nil (allocating nothing then).
func requestOf(ctx context.Context) *store.Request {
	r, ok := store.RequestFrom(ctx)
	if !ok {
		return nil
	}
	p := new(store.Request)
	*p = r
	return p
}

// run runs a script with keys and args and returns its reply (eval).
func (s *Store) run(ctx context.Context, sc *luaScript, keys []string, changes bool, args ...any) ([]any, error) {
	argv := make([]any, 3, 3+len(keys)+len(args))
	argv[2] = len(keys)
	for _, key := range keys {
		argv = append(argv, key)
	}
	return s.eval(ctx, sc, changes, append(argv, args...))
}

// eval runs a script and returns its reply: argv is the command's arguments, the first two
// left for the command and the script (EVALSHA and its SHA, or EVAL and its source after a
// NOSCRIPT), then the number of keys, the keys, the script's arguments. A script that may change
// the list is acknowledged by MinReplicas replicas first, when set; a reply that says nothing
// changed (a status other than 0: not loaded, empty, duplicate, ...) needs no acknowledgement. A
// change sent whose reply did not come back may have been made: store.ErrOutcomeUnknown.
func (s *Store) eval(ctx context.Context, sc *luaScript, changes bool, argv []any) ([]any, error) {
	cmd, err := runScript(ctx, s, sc, changes, argv, goredis.NewCmd)
	var reply []any
	if err == nil {
		reply, err = cmd.Slice()
	}
	return reply, s.evalFailure(err, changes)
}

// evalStrings is eval for a script whose reply is a flat array of strings and numbers, which
// go-redis then reads as strings (numbers in decimal) without boxing each into an interface
// value: scriptReadBatch's, a line each.
func (s *Store) evalStrings(ctx context.Context, sc *luaScript, changes bool, argv []any) ([]string, error) {
	cmd, err := runScript(ctx, s, sc, changes, argv, goredis.NewStringSliceCmd)
	var reply []string
	if err == nil {
		reply, err = cmd.Result()
	}
	return reply, s.evalFailure(err, changes)
}

// evalFailure is a script's failure as the store's: a change sent whose reply did not come back
// is store.ErrOutcomeUnknown.
func (s *Store) evalFailure(err error, changes bool) error {
	if err != nil && changes && sent(err) {
		s.log.Error("Redis did not answer a change, which may have been made", "error", err)
		return fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, err)
	}
	return s.failure(err)
}

// sent reports whether a command that failed with err may have reached Redis and run: anything
// but an answer of Redis' own (which says what it did), a connection that could not be made, or
// a client that never sent it.
func sent(err error) bool {
	var op *net.OpError
	switch {
	case err == nil, isReply(err), errors.Is(err, store.ErrNotRecorded), errors.Is(err, goredis.Nil):
		return false
	case errors.As(err, &op) && op.Op == "dial":
		return false
	case errors.Is(err, goredis.ErrPoolTimeout), errors.Is(err, goredis.ErrClosed), errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// runScript sends script sc with argv as the command newCmd makes, which reads its reply.
func runScript[C goredis.Cmder](ctx context.Context, s *Store, sc *luaScript, changes bool, argv []any, newCmd func(context.Context, ...any) C) (C, error) {
	argv[0], argv[1] = "evalsha", sc.sha
	cmd := newCmd(ctx, argv...)
	err := s.send(ctx, changes, cmd)
	if err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		// Nothing ran: the script is unknown to this Redis (a new master after a failover).
		argv[0], argv[1] = "eval", sc.src
		cmd = newCmd(ctx, argv...)
		err = s.send(ctx, changes, cmd)
	}
	return cmd, err
}

// send sends cmd, a script's (its first key at 3, where Cluster finds its slot, as go-redis' own
// Eval says), acknowledged by MinReplicas replicas when it changes a list.
func (s *Store) send(ctx context.Context, changes bool, cmd goredis.Cmder) error {
	cmd.SetFirstKeyPos(3)
	var err error
	if !changes || s.replicas == 0 {
		err = s.cmd.Process(ctx, cmd)
	} else {
		err = s.acknowledged(ctx, cmd)
	}
	if errors.Is(err, goredis.Nil) {
		return nil
	}
	return err
}

// write makes a change that is no script (a lease's index entry, a request's answer), also
// acknowledged by MinReplicas replicas when set. A reply of nil (a SET XX that found no key) is
// no failure.
func (s *Store) write(ctx context.Context, args ...any) error {
	var err error
	if s.replicas == 0 {
		err = s.cmd.Do(ctx, args...).Err()
	} else {
		err = s.acknowledged(ctx, goredis.NewCmd(ctx, args...))
	}
	if errors.Is(err, goredis.Nil) {
		return nil
	}
	return s.failure(err)
}

// acknowledged sends cmd, then WAIT, on one connection, since WAIT counts the replicas holding
// that connection's writes; cmd holds the reply. A change that fewer than MinReplicas replicas
// acknowledged is store.ErrNotRecorded, unless its reply says it changed nothing (unchanged).
func (s *Store) acknowledged(ctx context.Context, cmd goredis.Cmder) error {
	pipe := s.client.Pipeline()
	_ = pipe.Process(ctx, cmd)
	acked := pipe.Do(ctx, "wait", s.replicas, s.replWait.Milliseconds())
	_, _ = pipe.Exec(ctx)
	if err := cmd.Err(); err != nil && !errors.Is(err, goredis.Nil) {
		return err
	}
	n, err := acked.Int64()
	if err != nil {
		return err
	}
	if !unchanged(cmd) && n < int64(s.replicas) {
		return fmt.Errorf("%w: %d of %d replicas acknowledged the change", store.ErrNotRecorded, n, s.replicas)
	}
	return nil
}

// unchanged reports whether a script's reply says it changed nothing: its status, first, is
// not 0.
func unchanged(cmd goredis.Cmder) bool {
	switch cmd := cmd.(type) {
	case *goredis.Cmd:
		reply, ok := cmd.Val().([]any)
		return ok && status(reply) != 0
	case *goredis.StringSliceCmd:
		reply := cmd.Val()
		return len(reply) > 0 && reply[0] != "0"
	}
	return false
}

// failure maps a Redis error to the store's. The backend's own words are logged, not shown to
// clients, except where they tell the user what to fix (a key of the wrong type). Only what a
// retry can get past is store.ErrUnavailable (503): the connection, a Redis loading, failing over
// or moving slots, refused credentials; any other error Redis answers is the server's (500).
func (s *Store) failure(err error) error {
	switch {
	case err == nil, errors.Is(err, store.ErrNotRecorded):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case goredis.HasErrorPrefix(err, "STSREUSED"):
		return store.ErrRequestReused
	case goredis.HasErrorPrefix(err, "WRONGTYPE the key "):
		return fmt.Errorf("redis: %s", strings.TrimPrefix(err.Error(), "WRONGTYPE "))
	case goredis.HasErrorPrefix(err, "WRONGTYPE"):
		return &unnamedTypeError{strings.TrimPrefix(err.Error(), "WRONGTYPE ")}
	case goredis.HasErrorPrefix(err, "OOM"):
		s.log.Error("Redis is full (maxmemory); the change was refused", "error", err)
		return store.ErrFull
	case goredis.HasErrorPrefix(err, "NOAUTH"), goredis.HasErrorPrefix(err, "WRONGPASS"), goredis.HasErrorPrefix(err, "NOPERM"):
		s.log.Error("Redis refused the credentials", "error", err)
	case isReply(err) && !retryable(err):
		s.log.Error("Redis refused a request", "error", err)
		return fmt.Errorf("redis: %w", err)
	default:
		s.log.Error("Redis request failed", "error", err)
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// unnamedTypeError is Redis' own WRONGTYPE, which does not say which key: a lease script's
// (scripts.go), which leaves it to the command that meets the key (runLease names it).
type unnamedTypeError struct{ text string }

func (e *unnamedTypeError) Error() string { return "redis: " + e.text }

// isReply reports whether err is an answer of Redis' own (an error reply).
func isReply(err error) bool {
	var reply goredis.Error
	return errors.As(err, &reply)
}

// retryable reports whether an error Redis answered goes away by itself.
func retryable(err error) bool {
	for _, prefix := range []string{"LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK", "BUSY", "NOREPLICAS"} {
		if goredis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// register puts a list's name in the registry when its script says it is not there yet (flag
// 1), so that Lists finds it without scanning; the meta hash then records it, so that a failed
// SADD is tried again by the list's next change instead of leaving the list out for good.
func (s *Store) register(ctx context.Context, name string, flag any) error {
	if flag != int64(1) {
		return nil
	}
	if err := s.cmd.SAdd(ctx, s.registry(), name).Err(); err != nil {
		return s.failure(err)
	}
	if s.limits.MaxLists > 0 {
		s.countLists(ctx)
	}
	return s.failure(s.cmd.HSet(ctx, s.keysOf(name).meta(), "registered", "1").Err())
}

// countLists reads the registry's size into s.lists and returns it (-1 if Redis did not answer).
func (s *Store) countLists(ctx context.Context) int64 {
	n, err := s.cmd.SCard(ctx, s.registry()).Result()
	if err != nil {
		return -1
	}
	s.lists.Store(n)
	return n
}

// full is the last argument of the scripts that create a list: "1" when the registry was last
// seen at Limits.MaxLists, so that the script creates no list.
func (s *Store) full() string {
	if max := s.limits.MaxLists; max > 0 && s.lists.Load() >= max {
		return "1"
	}
	return "0"
}

// noRoom is the status of a script that found no room for a new list (full was "1").
const noRoom = 4

// creating runs a script that may create the list, through try, with the argument full. A
// refusal for want of room for a new list is checked once against the registry's size read
// afresh, since other servers' lists and this server's count may have moved apart; it stands as
// a *store.LimitError only when the registry is still full.
func (s *Store) creating(ctx context.Context, try func(full string) ([]any, error)) ([]any, error) {
	full := s.full()
	for {
		reply, err := try(full)
		if err != nil || status(reply) != noRoom {
			return reply, err
		}
		if full == "0" || s.countLists(ctx) >= s.limits.MaxLists {
			return nil, &store.LimitError{Limit: store.LimitLists, Max: s.limits.MaxLists}
		}
		full = "0"
	}
}

// status is the first element of a script's reply.
func status(reply []any) int64 {
	n, _ := reply[0].(int64)
	return n
}

// lines converts the lines of a reply.
func lines(v any) []string {
	items, _ := v.([]any)
	out := make([]string, len(items))
	for i, item := range items {
		out[i], _ = item.(string)
	}
	return out
}

// positions are the scripts' names of store positions.
// Their values are boxed once: an argument of a script costs no allocation.
var positions = map[store.Position]any{store.First: "F", store.Last: "L", store.Random: "R"}

// Length implements store.Store.
func (s *Store) Length(ctx context.Context, name string) (int, error) {
	k := s.keysOf(name)
	reply, err := s.runList(ctx, lengthScript, k, nil, nil, false)
	if err != nil {
		return 0, err
	}
	if n := status(reply); n >= 0 {
		return int(n), nil
	}
	return 0, store.ErrNotLoaded
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, name string, pos store.Position, n int, keep bool, wait time.Duration) ([]string, error) {
	if err := checkRead(pos, n); err != nil {
		return nil, err
	}
	k, r := s.keysOf(name), requestOf(ctx)
	return s.waitFor(ctx, name, wait, func() ([]string, error) {
		e := batchKey{name: name, pos: pos, keep: keep}
		if s.replicas == 0 {
			return s.readBatched(ctx, k, e, n, r)
		}
		alone := &batchedRead{ctx: ctx, n: n, r: r}
		s.sendBatch(ctx, k, e, []*batchedRead{alone})
		return alone.lines, alone.err
	})
}

func checkRead(pos store.Position, n int) error {
	if _, ok := positions[pos]; !ok {
		return fmt.Errorf("store: unknown read position %d", pos)
	}
	if n < 1 {
		return fmt.Errorf("store: cannot read %d lines", n)
	}
	return nil
}

// readArgs is the ARGV of a read from the position on: the position, n, the script's own
// arguments, then for Random the fractions that seed the picks (pick, in scripts.go).
func readArgs(pos store.Position, n int, own ...any) []any {
	return appendFractions(append([]any{positions[pos], n}, own...), pos, n)
}

// appendFractions appends to args, for a Random read of n lines, the fractions that seed its
// picks.
func appendFractions(args []any, pos store.Position, n int) []any {
	if pos == store.Random {
		for range n {
			args = append(args, mathrand.Float64())
		}
	}
	return args
}

// readFailure is the error of a read script's status 1 (not loaded), 2 (empty) or 3 (too short,
// with the list's length last in the reply).
func readFailure(status int64, have any, want int) error {
	switch status {
	case 1:
		return store.ErrNotLoaded
	case 2:
		return store.ErrEmpty
	}
	n, _ := have.(int64)
	return &store.ShortListError{Want: want, Have: int(n)}
}

// FIND reads the head in pages that grow from firstPage to maxPage lines, so that a hit near the
// front (the common case, and the contended one) costs a small read, then the other chunks,
// chunksPerRead of them a round trip, each read whole (at most chunkLines lines). Between reads
// the list may change: a line that concurrent consumers move across a page boundary, or into
// another chunk, may be missed by one scan (the FIND answers "Not find !"; a retry finds it).
// takeSlack is how far beyond the index where the scan saw a hit the take looks for it.
const (
	firstPage     = 64
	maxPage       = 8192
	takeSlack     = 1024
	chunksPerRead = maxPage / chunkLines
)

// takeBatch is the most hits a FIND offers one take, which takes the first still there
// (takeFirst): readers that consume the lines a scan saw, sixteen a round trip, left a FIND that
// offered one a round trip behind them until the list's end ("Not find !" after seconds, on a
// list that held lines all along).
const takeBatch = 32

// hit is a line FIND's scan accepted and where it saw it: the chunk's id ("" for the head) and
// the index in it.
type hit struct {
	line  string
	chunk string
	index int
}

// takeArgs are a take script's arguments: first, then the hits as its candidates, in threes.
func takeArgs(hits []hit, first ...any) []any {
	args := make([]any, len(first), len(first)+3*len(hits))
	copy(args, first)
	for _, h := range hits {
		args = append(args, h.line, h.chunk, h.index)
	}
	return args
}

// Find implements store.Store.
func (s *Store) Find(ctx context.Context, name string, match store.Matcher, keep bool, wait time.Duration) (string, error) {
	k, r := s.keysOf(name), requestOf(ctx)
	taken := func(reply []any) (string, bool) {
		if status(reply) != 0 {
			return "", false
		}
		line, _ := reply[1].(string)
		return line, true
	}
	if reply, err := s.recalled(ctx, slotTags()[slot(k.list)], r); err != nil || reply != nil {
		line, _ := taken(reply)
		return line, err
	}
	return s.find(ctx, name, match, wait, func(hits []hit) (string, bool, error) {
		reply, err := s.runList(ctx, takeScript, k, r, nil, true, takeArgs(hits, flag(keep))...)
		if err != nil {
			return "", false, err
		}
		line, ok := taken(reply)
		return line, ok, nil
	})
}

// find is FIND's scan, for Find and FindLeased: the first page is read by a script, which says
// whether the list exists; the next ones with plain LRANGEs, which cost Redis a fifth of a
// script's page. Each line the scan accepts goes to take with where the scan saw it, which takes
// it with a script that checks it is still there, and says whether it did and which line it took
// (a request's recorded outcome may be another); one that another server took first is passed
// over for the next match, so that FINDs racing for the same lines make progress instead of
// scanning again. After a take that found its hits gone, the next is offered more of them
// (batch), up to takeBatch, and takes the first still there.
func (s *Store) find(ctx context.Context, name string, match store.Matcher, wait time.Duration, take func(hits []hit) (string, bool, error)) (string, error) {
	k := s.keysOf(name)
	test, pause, done := s.waits.gated(ctx, name, match) // every try's matches (wait.go)
	defer done()
	found, err := s.waitFor(ctx, name, wait, func() ([]string, error) {
		reply, err := s.runList(ctx, pageScript, k, nil, nil, false, firstPage)
		if err != nil {
			return nil, err
		}
		if status(reply) == 1 {
			return nil, store.ErrNotLoaded
		}
		page := lines(reply[1])
		if len(page) == 0 {
			return nil, store.ErrEmpty
		}
		// batch is how many hits the next take is offered: one, as long as takes succeed, so that a
		// costly pattern is not tested on lines past the first hit; twice as many after each take
		// that found its hits gone, up to takeBatch.
		batch := 1
		scan := func(chunk string, start int, page []string) (string, bool, error) {
			defer pause() // no gate held over a round trip to Redis
			hits := make([]hit, 0, batch)
			for i, line := range page {
				ok, err := test(line)
				if err != nil {
					return "", true, err
				}
				if ok {
					hits = append(hits, hit{line, chunk, start + i})
				}
				if len(hits) == batch || len(hits) > 0 && i == len(page)-1 {
					pause()
					if took, taken, err := take(hits); err != nil || taken {
						return took, true, err
					}
					hits, batch = hits[:0], min(2*batch, takeBatch)
				}
			}
			return "", false, nil
		}
		for start, size := 0, firstPage; ; {
			if took, over, err := scan("", start, page); over {
				return []string{took}, err
			}
			if len(page) < size {
				break
			}
			start += size
			size = min(2*size, maxPage)
			if page, err = s.cmd.LRange(ctx, k.list, int64(start), int64(start+size-1)).Result(); err != nil {
				return nil, s.failure(err)
			}
		}
		for from := int64(0); ; from += chunksPerRead {
			ids, pages, err := s.readChunks(ctx, k, from, chunksPerRead)
			if err != nil {
				return nil, err
			}
			for i, id := range ids {
				if took, over, err := scan(id, 0, pages[i]); over {
					return []string{took}, err
				}
			}
			if len(ids) < chunksPerRead {
				return nil, store.ErrNoMatch
			}
		}
	})
	if err != nil {
		return "", err
	}
	return found[0], nil
}

// readChunks reads up to n chunks of list k's directory from position from on, whole, in one
// round trip after the directory's: their ids and lines. A chunk gone meanwhile reads empty.
func (s *Store) readChunks(ctx context.Context, k keys, from, n int64) ([]string, [][]string, error) {
	ids, err := s.cmd.LRange(ctx, k.chunks(), from, from+n-1).Result()
	if err != nil || len(ids) == 0 {
		return nil, nil, s.failure(err)
	}
	pipe := s.client.Pipeline()
	cmds := make([]*goredis.StringSliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.LRange(ctx, k.chunk(id), 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, s.failure(err)
	}
	pages := make([][]string, len(ids))
	for i, cmd := range cmds {
		pages[i] = cmd.Val()
	}
	return ids, pages, nil
}

// Add implements store.Store.
func (s *Store) Add(ctx context.Context, name, line string, pos store.Position, unique bool) error {
	p, ok := positions[pos]
	if !ok || pos == store.Random {
		if err := s.Ensure(ctx, name); err != nil {
			return err
		}
		return fmt.Errorf("store: cannot add at position %d, only First or Last", pos)
	}
	if max := s.limits.MaxLineBytes; max > 0 && int64(len(line)) > max {
		if err := s.Ensure(ctx, name); err != nil {
			return err
		}
		return &store.LimitError{Limit: store.LimitLineBytes, Max: max}
	}
	k, r := s.keysOf(name), requestOf(ctx)
	checked := ""
	build := false
	defer func() {
		// The build goes on in the background once this ADD has looked through what it has
		// still to count: this server's steps would stand between its looks, which Redis runs
		// one at a time.
		if build {
			s.buildInBackground(name)
		}
	}()
	for {
		reply, err := s.creating(ctx, func(full string) ([]any, error) {
			return s.runList(ctx, addScript, k, r, nil, true,
				line, p, flag(unique), s.limits.MaxLinesPerList, s.channel(), name, checked, full)
		})
		if err != nil {
			return err
		}
		if err := s.register(ctx, name, reply[1]); err != nil {
			return err
		}
		switch status(reply) {
		case 1:
			return store.ErrDuplicate
		case 2:
			return &store.LimitError{Limit: store.LimitLinesPerList, Max: s.limits.MaxLinesPerList}
		case indexing:
			// The index is not built: the line is looked for in what the build has still to
			// count, unless it cannot (then the ADD runs a step of the build first).
			build = true
			if checked, err = s.checkUnique(ctx, k, line); err != nil {
				return err
			}
			if checked == "" {
				// Not yet: a step of the build (its beginning, the leases of before it), then
				// again.
				if _, err := s.indexStep(ctx, name); err != nil {
					return err
				}
			}
			continue
		}
		return nil
	}
}

// indexing is scriptAdd's status for a UNIQUE ADD whose list's unique index is not built.
const indexing = 5

// checkBudget is how many lines a step of scriptCheck looks through (LPOS: a few ms at most).
const checkBudget = 64 * chunkLines

// checkUnique looks for line in the chunks list k's unique index has still to count
// (scriptCheck), a bounded step at a time, and returns the generation in which it found it in
// none, for scriptAdd; store.ErrDuplicate when it found it; "" when it cannot look (the build
// has not begun, or counts the leases of before it, or cuts a chunk of an earlier version, or
// LOADs kept starting other generations): the ADD then runs a step of the build, and asks again.
func (s *Store) checkUnique(ctx context.Context, k keys, line string) (string, error) {
	for attempt := 0; attempt < 3; attempt++ {
		pos, generation := any(-1), ""
		for {
			reply, err := s.runList(ctx, checkScript, k, nil, nil, false, line, pos, checkBudget)
			if err != nil {
				return "", err
			}
			switch status(reply) {
			case 1:
				return "", store.ErrDuplicate
			case 3, 4:
				return "", nil
			}
			g, _ := reply[len(reply)-1].(string)
			if generation != "" && g != generation {
				break // look again, from the end
			}
			generation = g
			if status(reply) == 0 {
				return generation, nil
			}
			pos = reply[1]
		}
	}
	return "", nil
}

// buildInBackground runs the build of list name's unique index (buildIndex) in a goroutine of
// its own, one per list in this process, so that it goes on after the UNIQUE ADD that began it
// answered. A server that stops leaves the rest to the next UNIQUE ADD, on any server.
func (s *Store) buildInBackground(name string) {
	s.inBackground("index", name, s.buildIndex)
}

// inBackground runs job on list name in a goroutine of its own, unless this process runs it on
// that list already, until it ends or the store closes.
func (s *Store) inBackground(job, name string, run func(ctx context.Context, name string) error) {
	s.buildingMu.Lock()
	defer s.buildingMu.Unlock()
	if s.building == nil {
		s.building = map[string]bool{}
	}
	key := job + "\x00" + name
	if s.building[key] || s.closing {
		return
	}
	s.building[key] = true
	s.stopped.Add(1)
	go func() {
		defer s.stopped.Done()
		_ = run(s.background, name)
		s.buildingMu.Lock()
		delete(s.building, key)
		s.buildingMu.Unlock()
	}()
}

// buildIndex runs the steps of list name's unique index's build (scriptIndex) until it is built:
// each counts a bounded number of lines, and every change of the list meanwhile keeps what it
// counted right, so that several servers may run steps at once, and a build left by a server
// that died goes on with the next UNIQUE ADD.
func (s *Store) buildIndex(ctx context.Context, name string) error {
	for {
		if built, err := s.indexStep(ctx, name); err != nil || built {
			// The build's first step dropped what index the list had (an earlier version's
			// too): its garbage goes now, not at the expiry loop's next sweep.
			s.inBackground("garbage", name, s.collect)
			return err
		}
	}
}

// indexStep runs a step of list name's unique index's build, and says whether it is built.
func (s *Store) indexStep(ctx context.Context, name string) (bool, error) {
	// A step is no client's change: it waits for no replica (a failover loses the last steps at
	// worst, and the build goes on from there), and a lost reply is a step to run again.
	reply, err := s.runList(ctx, indexScript, s.keysOf(name), nil, nil, false, indexBudget)
	if err != nil {
		return false, err
	}
	switch status(reply) {
	case 0:
		return true, nil
	case 2:
		// Too many lines bound for the dead letters to count in a step: they move first (a
		// claim of another server's is waited for).
		if err := s.deadLetter(ctx, name); err != nil {
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(loopRest):
		}
	}
	return false, nil
}

// tidy runs list name's chores (scripts.go) to their end, a bounded step at a time: what a change
// left to delete or to make permanent; then empties its garbage in the background (collect). A
// failure leaves them to the expiry loop, which finds them at its next sweep; a client that goes
// away does not stop them.
func (s *Store) tidy(ctx context.Context, name string) {
	ctx = context.WithoutCancel(ctx)
	k := s.keysOf(name)
	for {
		reply, err := s.runList(ctx, choresScript, k, nil, nil, false, choreBudget, 0)
		if err != nil || status(reply) == 0 {
			return
		}
		if status(reply) == 2 {
			s.inBackground("garbage", name, s.collect)
			return
		}
	}
}

// garbagePause is how long collect leaves Redis to its other clients between two steps.
const garbagePause = time.Millisecond

// collect empties list name's garbage (scripts.go), garbageBudget members a step, a pause between
// two, so that Redis spends at most about half its time on it: the structures a change dropped
// (a unique index of ten million lines, 10 000 steps) go without a thread of Redis freeing them
// all at once.
func (s *Store) collect(ctx context.Context, name string) error {
	k := s.keysOf(name)
	for {
		reply, err := s.runList(ctx, choresScript, k, nil, nil, false, choreBudget, garbageBudget)
		if err != nil || status(reply) == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(garbagePause):
		}
	}
}

// Ensure implements store.Store.
func (s *Store) Ensure(ctx context.Context, name string) error {
	k := s.keysOf(name)
	reply, err := s.creating(ctx, func(full string) ([]any, error) {
		return s.runList(ctx, ensureScript, k, nil, nil, true, full)
	})
	if err != nil {
		return err
	}
	return s.register(ctx, name, reply[1])
}

// Insert implements store.Store.
func (s *Store) Insert(ctx context.Context, name string, lines []string, pos store.Position) error {
	p, ok := positions[pos]
	if !ok || pos == store.Random {
		return fmt.Errorf("store: cannot insert at position %d, only First or Last", pos)
	}
	r := requestOf(ctx)
	_, err := s.bulk(ctx, name, lines, r, s.staged(ctx, insertScript, name, r, len(lines), p, s.limits.MaxLinesPerList))
	return err
}

// Replace implements store.Store.
func (s *Store) Replace(ctx context.Context, name string, lines []string, digest string) error {
	r := requestOf(ctx)
	_, err := s.bulk(ctx, name, lines, r, s.staged(ctx, replaceScript, name, r, len(lines), digest, 0, s.limits.MaxLinesPerList))
	return err
}

// LoadOnce implements store.Store. The list's existence is looked at before the lines are
// uploaded, so a server that starts beside others that loaded the dataset sends nothing; the
// script looks again when it swaps the lines in, so that of servers starting together one loads
// the list and the others keep it, whatever their contents.
func (s *Store) LoadOnce(ctx context.Context, name string, lines []string, digest string) (bool, string, error) {
	meta, err := s.cmd.HMGet(ctx, s.keysOf(name).meta(), "created", "digest").Result()
	if err != nil {
		return false, "", s.failure(err)
	}
	if meta[0] != nil {
		held, _ := meta[1].(string)
		return false, held, nil
	}
	reply, err := s.bulk(ctx, name, lines, nil, s.staged(ctx, replaceScript, name, nil, len(lines), digest, 1, s.limits.MaxLinesPerList))
	if err != nil {
		return false, "", err
	}
	if status(reply) == 1 {
		held, _ := reply[2].(string)
		return false, held, nil
	}
	return true, digest, nil
}

// stagingTTL is how long an upload's chunks outlive a server that died between the upload and
// the script.
const stagingTTL = 10 * time.Minute

// errStagingLost is a bulk change whose uploaded lines were not all there when the script ran
// (a failover in between, or an eviction): nothing was changed, and the client may retry.
var errStagingLost = fmt.Errorf("%w: the uploaded lines were lost before they could be moved in (a failover?)", store.ErrUnavailable)

// bulk uploads lines into chunks of the list's slot, then runs a bulk script (Insert, Replace,
// Reload) under request r through run, which checks they are all there and makes them the list's
// as one change, then runs the chores that change left, and returns its reply: status 0 done, 1
// kept (LoadOnce). A request whose outcome is recorded uploads nothing.
func (s *Store) bulk(ctx context.Context, name string, lines []string, r *store.Request, run func(staging, full string) ([]any, error)) ([]any, error) {
	if _, err := s.limits.Measure(lines); err != nil {
		return nil, err
	}
	if reply, err := s.recalled(ctx, slotTags()[slot(s.keysOf(name).list)], r); err != nil || reply != nil {
		return reply, err
	}
	// Each try uploads the lines again: what a script did not take is deleted.
	reply, err := s.creating(ctx, func(full string) ([]any, error) {
		return s.upload(ctx, name, lines, func(staging string) ([]any, error) { return run(staging, full) })
	})
	if err != nil {
		return nil, err
	}
	s.tidy(ctx, name)
	switch status(reply) {
	case 2:
		return nil, &store.LimitError{Limit: store.LimitLinesPerList, Max: s.limits.MaxLinesPerList}
	case 3:
		return nil, errStagingLost
	}
	return reply, nil
}

// staged is bulk's run of sc (Insert or Replace) with args and the arguments every such script
// takes (the line count, the channel, the name, full), which registers the list if the script
// created it.
func (s *Store) staged(ctx context.Context, sc *luaScript, name string, r *store.Request, count int, args ...any) func(staging, full string) ([]any, error) {
	return func(staging, full string) ([]any, error) {
		argv := append(slices.Clip(args), count, s.channel(), name, full)
		reply, err := s.runList(ctx, sc, s.keysOf(name), r, []string{staging}, true, argv...)
		if err != nil {
			return nil, err
		}
		return reply, s.register(ctx, name, reply[1])
	}
}

// upload stages lines in the list's slot, then runs the bulk script through run, and deletes
// what it staged unless the script took it.
func (s *Store) upload(ctx context.Context, name string, lines []string, run func(staging string) ([]any, error)) ([]any, error) {
	staging, chunks, err := s.stage(ctx, s.keysOf(name), lines)
	if err != nil {
		return nil, err
	}
	reply, err := run(staging)
	s.dropStaging(staging, chunks)
	return reply, err
}

// stage uploads lines into new chunks of chunkLines lines (the last the rest) of the list's
// slot, and their ids, in order, into a new staging directory (scripts.go), written last; it
// returns the directory's key and the chunks' keys. All expire after stagingTTL unless a script
// takes them.
func (s *Store) stage(ctx context.Context, k keys, lines []string) (string, []string, error) {
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	// Not a number, which the unique index's build tells apart from the chunks scripts make.
	tag := "s" + hex.EncodeToString(suffix)
	staging := k.list + ":staging:" + tag
	if len(lines) == 0 {
		return staging, nil, nil
	}
	ids := make([]any, 0, len(lines)/chunkLines+1)
	chunks := make([]string, 0, cap(ids))
	// Pipelines of stagingBatch chunks, each written within the connection's write timeout
	// however long the upload, one after the other: the directory last, once Redis answered
	// for every chunk (staged).
	pipe := s.client.Pipeline()
	for i := 0; i < len(lines); i += chunkLines {
		id := tag + "." + strconv.Itoa(len(ids))
		key := k.chunk(id)
		part := lines[i:min(i+chunkLines, len(lines))]
		values := make([]any, len(part))
		for j, line := range part {
			values[j] = line
		}
		pipe.RPush(ctx, key, values...)
		pipe.Expire(ctx, key, stagingTTL)
		ids, chunks = append(ids, id), append(chunks, key)
		if len(ids)%stagingBatch == 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				s.dropStaging(staging, chunks)
				return "", nil, s.failure(err)
			}
		}
	}
	pipe.RPush(ctx, staging, ids...)
	pipe.Expire(ctx, staging, stagingTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		s.dropStaging(staging, chunks)
		return "", nil, s.failure(err)
	}
	return staging, chunks, nil
}

// stagingBatch is how many chunks an upload writes in one pipeline (a few MB).
const stagingBatch = 256

// dropStagingScript deletes an upload that no script took: its directory, its last chunk and
// some others (KEYS) when the directory still expires, which a script that took it stopped (or
// renamed it). Replies 1 when it deleted them: the other chunks can go then, since no script
// takes an upload whose directory or last chunk is missing (staged).
var dropStagingScript = goredis.NewScript(`
if redis.call('PTTL', KEYS[1]) < 0 then return 0 end
for i = 1, #KEYS, 1000 do redis.call('UNLINK', unpack(KEYS, i, math.min(i + 999, #KEYS))) end
return 1
`)

// dropStaging deletes an upload (its directory and chunks) unless a script took it, so that a
// failed LOAD does not hold its lines (and a full Redis) until they expire. The first step is
// atomic with respect to the scripts; the chunks left are then no script's.
func (s *Store) dropStaging(staging string, chunks []string) {
	if len(chunks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	const batch = 256
	first := append([]string{staging, chunks[len(chunks)-1]}, chunks[:min(batch, len(chunks)-1)]...)
	if n, err := dropStagingScript.Run(ctx, s.client, first).Int(); err != nil || n == 0 {
		return
	}
	pipe := s.client.Pipeline()
	for i := batch; i < len(chunks)-1; i += batch {
		pipe.Unlink(ctx, chunks[i:min(i+batch, len(chunks)-1)]...)
	}
	_, _ = pipe.Exec(ctx)
}

// Lines implements store.Store. A list of one chunk is copied in one step; a longer one a chunk
// at a time (the head in pages of maxPage lines, then chunksPerRead chunks a round trip), so that
// no command holds Redis for the whole list: a copy of a list that changes meanwhile is the
// chunks as each was when it was read.
func (s *Store) Lines(ctx context.Context, name string) ([]string, error) {
	k := s.keysOf(name)
	reply, err := s.runList(ctx, linesScript, k, nil, nil, false)
	if err != nil {
		return nil, err
	}
	switch status(reply) {
	case 0:
		return lines(reply[1]), nil
	case 1:
		return nil, store.ErrNotLoaded
	}
	var all []string
	for start := int64(0); ; start += maxPage {
		page, err := s.cmd.LRange(ctx, k.list, start, start+maxPage-1).Result()
		if err != nil {
			return nil, s.failure(err)
		}
		all = append(all, page...)
		if len(page) < maxPage {
			break
		}
	}
	for from := int64(0); ; from += chunksPerRead {
		ids, pages, err := s.readChunks(ctx, k, from, chunksPerRead)
		if err != nil {
			return nil, err
		}
		for _, page := range pages {
			all = append(all, page...)
		}
		if len(ids) < chunksPerRead {
			return all, nil
		}
	}
}

// Page implements store.Store: the length and the page in one script of the list's slot, so
// that they are of the same moment, unless the list has so many chunks before the page that the
// script walks past them in several steps (scriptView).
func (s *Store) Page(ctx context.Context, name string, offset, n int) ([]string, int, error) {
	if err := store.CheckPage(offset, n); err != nil {
		return nil, 0, err
	}
	k := s.keysOf(name)
	var chunk, base any = -1, 0
	for {
		reply, err := s.runList(ctx, viewScript, k, nil, nil, false, n, offset, chunk, base)
		if err != nil {
			return nil, 0, err
		}
		switch status(reply) {
		case 1:
			return nil, 0, store.ErrNotLoaded
		case 2:
			chunk, base = reply[2], reply[3]
			continue
		}
		length, _ := reply[1].(int64)
		return lines(reply[2]), int(length), nil
	}
}

// Reset implements store.Store.
func (s *Store) Reset(ctx context.Context, name string) (bool, error) {
	k := s.keysOf(name)
	reply, err := s.runList(ctx, resetScript, k, requestOf(ctx), nil, true)
	if err != nil {
		return false, err
	}
	s.tidy(ctx, name)
	return status(reply) == 1, nil
}

// Lists implements store.Store: the registry's names, read with SSCAN a page at a time, then
// each list's length and counters in pipelines of as many commands (per shard on Cluster): every
// command is O(1) or a page, whatever the number of lists.
func (s *Store) Lists(ctx context.Context) ([]store.ListInfo, error) {
	names, err := s.listNames(ctx)
	if err != nil {
		return nil, err
	}
	s.lists.Store(int64(len(names)))
	slices.Sort(names)
	infos := make([]store.ListInfo, 0, len(names))
	for page := range slices.Chunk(names, registryPage) {
		pipe := s.client.Pipeline()
		heads := make([]*goredis.IntCmd, len(page))
		metas := make([]*goredis.SliceCmd, len(page))
		for i, name := range page {
			k := s.keysOf(name)
			heads[i] = pipe.LLen(ctx, k.list)
			metas[i] = pipe.HMGet(ctx, k.meta(), "digest", "leased", "returned", "deadLettered", "rest")
		}
		// A key of the wrong type fails its own command only: the list is shown with what could
		// be read. Anything else (the connection) fails the whole answer.
		_, err := pipe.Exec(ctx)
		if err != nil && !errors.Is(err, goredis.Nil) && !isReply(err) {
			return nil, s.failure(err)
		}
		for i, name := range page {
			meta := make([]string, 5)
			for j, v := range metas[i].Val() {
				meta[j], _ = v.(string)
			}
			leased, _ := strconv.Atoi(meta[1])
			returned, _ := strconv.ParseInt(meta[2], 10, 64)
			dead, _ := strconv.ParseInt(meta[3], 10, 64)
			rest, _ := strconv.Atoi(meta[4])
			infos = append(infos, store.ListInfo{
				Name: name, Length: int(heads[i].Val()) + rest, Digest: meta[0],
				Leased: leased, Returned: returned, DeadLettered: dead,
			})
		}
	}
	return infos, nil
}

// registryPage is how many names an SSCAN of the registry asks for, and how many lists' commands
// go in one pipeline.
const registryPage = 1000

// listNames reads the registry with SSCAN, a page at a time.
func (s *Store) listNames(ctx context.Context) ([]string, error) {
	var names []string
	for cursor := uint64(0); ; {
		page, next, err := s.cmd.SScan(ctx, s.registry(), cursor, "", registryPage).Result()
		if err != nil {
			return nil, s.failure(err)
		}
		names = append(names, page...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	// SSCAN may give a name more than once.
	slices.Sort(names)
	return slices.Compact(names), nil
}

// flag is b as a script's argument ("1" or "0", boxed without an allocation).
func flag(b bool) any {
	if b {
		return "1"
	}
	return "0"
}
