package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Leases (store/lease.go). A list's leases live in its own slot (keys.go), changed by the lease
// scripts (scripts.go), with Redis' clock, and so does each lease's index entry (an id to its
// list, so that an id alone finds its lease), since a lease id carries its list's slot
// (slots.go): the scripts write it with the lease. The expiry loop's schedule (the lists whose
// leases or dead letters need it, by when) lives in a slot of its own, written by the server
// after a script.
//
// Expiry. Every lease script first gives back what has run out in its list, so a list whose
// leases are in use is never late. The others are the loop's (expireLeases): each Store runs one,
// which visits the lists the schedule says are due with scriptExpire, and sleeps until the next
// is due, a second at most, since other servers schedule too; a loop with no lease anywhere
// costs one small script a second. The schedule is a hint: a script records the list's truth
// (meta "due") and replies when it is earlier than before, and the server then reports it
// (scriptSchedule), without a lock between the two slots. A report of a change is newer than the
// truth a loop visit found if it lands after the visit's look, which scriptSchedule sorts out; a
// server that dies between its script and its report leaves the list out of the schedule, so
// every loop also sweeps the lists' "due" fields every sweepInterval and reports them again. A
// lease is then back at most that late, and never lost.
//
// Dead letters are the other change of two slots: the line leaves the list for a staging list of
// its slot in the script that ends its lease, and the server then moves it into the dead-letter
// list (deadLetter, scriptDeadLetters), copying before dropping, so that a crash between the two
// copies it twice at worst, never loses it.

const (
	// dueBatch is how many entries of the schedule the loop reads at a time.
	dueBatch = 100
	// loopRest and loopSleep bound the loop's sleep between two looks at the schedule: at least
	// loopRest, so that a list whose due time stays past (its dead letters are being moved by
	// another server) does not make it spin; at most loopSleep, since other servers schedule
	// lists without telling it.
	loopRest  = 20 * time.Millisecond
	loopSleep = time.Second
	// deadClaimStale is how long a server may take to move a batch of dead letters before
	// another takes over, as from a server that died: beyond Redis' own timeouts, a few seconds.
	deadClaimStale = 30 * time.Second
	// sweepInterval is how often each loop sweeps every list for what the schedule misses, the
	// first time as soon as Redis answers.
	sweepInterval = time.Minute
)

// acked is how scriptEnd names an acknowledgement, beside store.LeaseReleased (and
// store.LeaseExpired, the expiry's).
const acked = "acked"

// ReadLeased implements store.Store.
func (s *Store) ReadLeased(ctx context.Context, name string, pos store.Position, n int, spec store.LeaseSpec, wait time.Duration) (store.Lease, error) {
	spec, err := s.prepareLease(ctx, name, spec)
	if err != nil {
		return store.Lease{}, err
	}
	if err := checkRead(pos, n); err != nil {
		return store.Lease{}, err
	}
	k, r := s.keysOf(name), requestOf(ctx)
	id := newLeaseID(k)
	var lease store.Lease
	_, err = s.waitFor(ctx, name, wait, func() ([]string, error) {
		args := append([]any{s.channel(), name}, readArgs(pos, n, id, spec.TTL.Milliseconds(), spec.MaxDeliveries)...)
		reply, err := s.runLease(ctx, readLeasedScript, name, k, r, s.leaseIndex(id), args...)
		if err != nil {
			return nil, err
		}
		s.after(ctx, name, reply)
		if st := status(reply); st != 0 {
			return nil, readFailure(st, reply[len(reply)-1], n)
		}
		lease = leased(reply[6], name, lines(reply[5]), reply[4])
		return lease.Lines, nil
	})
	return lease, err
}

// FindLeased implements store.Store.
func (s *Store) FindLeased(ctx context.Context, name string, match store.Matcher, spec store.LeaseSpec, wait time.Duration) (store.Lease, error) {
	spec, err := s.prepareLease(ctx, name, spec)
	if err != nil {
		return store.Lease{}, err
	}
	k, r := s.keysOf(name), requestOf(ctx)
	id := newLeaseID(k)
	// A take's reply: answer(0, expiry, line, id).
	taken := func(reply []any) store.Lease {
		line, _ := reply[5].(string)
		return leased(reply[6], name, []string{line}, reply[4])
	}
	if reply, err := s.recalled(ctx, slotTags()[slot(k.list)], r); err != nil || reply != nil {
		if err != nil {
			return store.Lease{}, err
		}
		return taken(reply), nil
	}
	var lease store.Lease
	_, err = s.find(ctx, name, match, wait, func(hits []hit) (string, bool, error) {
		args := takeArgs(hits, s.channel(), name, id, spec.TTL.Milliseconds(), spec.MaxDeliveries)
		reply, err := s.runLease(ctx, takeLeasedScript, name, k, r, s.leaseIndex(id), args...)
		if err != nil {
			return "", false, err
		}
		s.after(ctx, name, reply)
		if status(reply) != 0 {
			return "", false, nil
		}
		lease = taken(reply)
		return lease.Lines[0], true, nil
	})
	return lease, err
}

// prepareLease checks spec and creates the dead-letter list a lease of list name may send lines
// to, within Limits.MaxLists, before the read takes a line; a lease of a dead-letter list never
// dead-letters (its MaxDeliveries becomes 0).
func (s *Store) prepareLease(ctx context.Context, name string, spec store.LeaseSpec) (store.LeaseSpec, error) {
	if err := spec.Check(); err != nil {
		return spec, err
	}
	if store.IsDeadLetterList(name) {
		spec.MaxDeliveries = 0
	}
	if spec.MaxDeliveries == 0 {
		return spec, nil
	}
	return spec, s.Ensure(ctx, store.DeadLetterList(name))
}

// leased is the lease that a script gave (and indexed, in the same step), or recalled.
func leased(id any, name string, lines []string, expiry any) store.Lease {
	ms, _ := expiry.(int64)
	s, _ := id.(string)
	return store.Lease{ID: s, List: name, Lines: lines, Expires: time.UnixMilli(ms)}
}

// Ack implements store.Store.
func (s *Store) Ack(ctx context.Context, ref store.LeaseRef) error {
	// By id, the script deletes the lease's index entry: only a lease that ended otherwise must
	// be remembered.
	_, err := s.onLease(ctx, ref, endScript, acked, positions[store.First])
	return err
}

// Release implements store.Store.
func (s *Store) Release(ctx context.Context, ref store.LeaseRef, pos store.Position) error {
	if pos != store.First && pos != store.Last {
		return fmt.Errorf("%w: release to position %d, only First or Last", store.ErrBadLease, pos)
	}
	_, err := s.onLease(ctx, ref, endScript, store.LeaseReleased, positions[pos])
	return err
}

// Extend implements store.Store.
func (s *Store) Extend(ctx context.Context, ref store.LeaseRef, ttl time.Duration) (time.Time, error) {
	if ttl <= 0 {
		return time.Time{}, fmt.Errorf("%w: extend by %v", store.ErrBadLease, ttl)
	}
	reply, err := s.onLease(ctx, ref, extendScript, ttl.Milliseconds())
	if err != nil {
		return time.Time{}, err
	}
	expiry, _ := reply[5].(int64)
	if ref.ID == "" {
		// By id, the script keeps the index entry as long as the lease; by line, the server does.
		id, _ := reply[4].(string)
		if err := s.write(ctx, "pexpireat", s.leaseIndex(id), expiry+store.LeaseMemory.Milliseconds()); err != nil {
			return time.Time{}, err
		}
	}
	return time.UnixMilli(expiry), nil
}

// Reload implements store.Store: the lines uploaded as for Replace, then one script in the list's
// slot (scriptReload), whose reply the server then follows like any lease script's (after), for
// the dead letters waiting.
func (s *Store) Reload(ctx context.Context, name string, lines []string, digest string) (int, error) {
	k, r := s.keysOf(name), requestOf(ctx)
	tag := slotTags()[slot(k.list)]
	reply, err := s.bulk(ctx, name, lines, r, func(staging, full string) ([]any, error) {
		reply, err := s.runList(ctx, reloadScript, k, r, []string{staging}, true,
			s.channel(), name, tag, s.leaseIndex(tag), digest, s.limits.MaxLinesPerList, len(lines), full)
		if err != nil || status(reply) != 0 {
			return reply, err
		}
		return reply, s.register(ctx, name, reply[4])
	})
	if err != nil {
		return 0, err
	}
	s.after(ctx, name, reply)
	n, _ := reply[5].(int64)
	return int(n), nil
}

// onLease runs a script (scriptEnd, scriptExtend) on the lease that ref names, with ARGV the
// channel, the list's name, the id, the line, then args, and maps the scripts' failures. By id,
// KEYS[3] is the lease's index entry, and the script runs on ref.List when it is given (and in
// the id's slot), else on the list that the index entry names; a script that does not find the
// lease in ref.List and finds that the entry names another list runs again there. Under a
// request, the outcome recorded in the id's slot (a retry's: the lease and its index entry may
// be gone) is looked at first, and again when the lease is not found.
func (s *Store) onLease(ctx context.Context, ref store.LeaseRef, sc *luaScript, args ...any) ([]any, error) {
	r := requestOf(ctx)
	if r == nil {
		return s.leaseScript(ctx, ref, nil, sc, args...)
	}
	tag := ref.ID
	if tag == "" {
		tag = slotTags()[slot(s.keysOf(ref.List).list)]
	}
	tag = tag[:min(len(tag), tagLen)]
	if reply, err := s.recalled(ctx, tag, r); err != nil || reply != nil {
		return reply, err
	}
	reply, err := s.leaseScript(ctx, ref, r, sc, args...)
	if errors.Is(err, store.ErrLeaseNotFound) || errors.As(err, new(*store.LeaseEndedError)) {
		if prior, recallErr := s.recalled(ctx, tag, r); recallErr != nil || prior != nil {
			return prior, recallErr
		}
	}
	return reply, err
}

// leaseScript is onLease's run of sc, under request r.
func (s *Store) leaseScript(ctx context.Context, ref store.LeaseRef, r *store.Request, sc *luaScript, args ...any) ([]any, error) {
	name, index := ref.List, ""
	if ref.ID != "" {
		index = s.leaseIndex(ref.ID)
		if name == "" || slot(s.keysOf(name).list) != slot(index) {
			var err error
			if name, err = s.cmd.Get(ctx, index).Result(); errors.Is(err, goredis.Nil) {
				return nil, store.ErrLeaseNotFound
			} else if err != nil {
				return nil, s.failure(err)
			}
		}
	}
	for moved := false; ; moved = true {
		k := s.keysOf(name)
		if index != "" && slot(k.list) != slot(index) {
			return nil, store.ErrLeaseNotFound // no id of this store's
		}
		reply, err := s.runLease(ctx, sc, name, k, r, index, append([]any{s.channel(), name, ref.ID, ref.Line}, args...)...)
		if err != nil {
			return nil, err
		}
		s.after(ctx, name, reply)
		switch status(reply) {
		case 1:
			return nil, store.ErrLeaseNotFound
		case 2:
			how, _ := reply[4].(string)
			return nil, &store.LeaseEndedError{ID: ref.ID, How: how}
		case 3:
			if moved {
				return nil, store.ErrLeaseNotFound
			}
			name, _ = reply[4].(string)
			continue
		}
		return reply, nil
	}
}

// runLease runs a lease script that changes list name (k), under request r, with index the
// lease's index entry ("" for none). The common paths of these scripts check no key's type
// beforehand (scripts.go): Redis stops them, before they change anything, at the first command
// that meets a key of the wrong type, without naming it; scriptExpire, which checks every key
// first and then changes nothing, names it.
func (s *Store) runLease(ctx context.Context, sc *luaScript, name string, k keys, r *store.Request, index string, args ...any) ([]any, error) {
	var extra []string
	if index != "" {
		extra = []string{index}
	}
	reply, err := s.runList(ctx, sc, k, r, extra, true, args...)
	var unnamed *unnamedTypeError
	if errors.As(err, &unnamed) {
		if _, named := s.runList(ctx, expireScript, k, nil, nil, true, s.channel(), name); named != nil {
			return nil, named
		}
	}
	return reply, err
}

// after does what a lease script's reply asks of the server: report an earlier due time to the
// schedule, and move waiting dead letters. The operation itself is done: a failure here is
// logged (failure) and left to the expiry loop, and a client that goes away does not stop it.
func (s *Store) after(ctx context.Context, name string, reply []any) {
	ctx = context.WithoutCancel(ctx)
	if due, _ := reply[1].(int64); reply[2] == int64(1) && s.schedule(ctx, name, due, "") == nil && due < s.wake.Load() {
		select {
		case s.due <- struct{}{}:
		default:
		}
	}
	if reply[3] == int64(1) {
		_ = s.deadLetter(ctx, name)
	}
}

// schedule reports when list name next needs the expiry loop (-1: never) to the schedule; seen is
// the score a loop visit saw before it looked ("" for a change's report).
func (s *Store) schedule(ctx context.Context, name string, due any, seen string) error {
	_, err := s.run(ctx, scheduleScript, []string{s.dueLists()}, true, name, due, seen)
	return err
}

// deadLetter moves the lines waiting in list name's dead-letter staging list into its dead-letter
// list, a batch at a time: a copy into that list, which it creates whatever the limits (the lines
// count already, and refusing would lose them), then a script that drops the batch from the
// staging list. A crash between the two leaves the batch to be copied again by another server
// once the claim is stale: a duplicate dead letter, never a lost one.
func (s *Store) deadLetter(ctx context.Context, name string) error {
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	k, dead, moved := s.keysOf(name), store.DeadLetterList(name), 0
	for {
		reply, err := s.runList(ctx, deadLettersScript, k, nil, nil, true, s.channel(), name, hex.EncodeToString(token), moved, chunkLines, deadClaimStale.Milliseconds())
		if err != nil || status(reply) != 0 || len(reply) < 5 {
			return err
		}
		batch := lines(reply[4])
		insert := s.staged(ctx, insertScript, dead, nil, len(batch), positions[store.Last], 0)
		reply, err = s.upload(ctx, dead, batch, func(staging string) ([]any, error) { return insert(staging, "0") })
		if err != nil {
			return err
		}
		if status(reply) != 0 {
			return errStagingLost
		}
		moved = len(batch)
	}
}

// expireLeases is the expiry loop, until the store closes.
func (s *Store) expireLeases(ctx context.Context) {
	defer s.stopped.Done()
	var swept time.Time
	for {
		if time.Since(swept) >= sweepInterval && s.Up() {
			s.sweep(ctx)
			swept = time.Now()
		}
		timer := time.NewTimer(s.visitDue(ctx))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.due:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// visitDue visits the lists that the schedule says are due, and returns how long the loop may
// sleep before it looks again; s.wake is then when it will, by Redis' clock.
func (s *Store) visitDue(ctx context.Context) time.Duration {
	reply, err := s.run(ctx, dueListsScript, []string{s.dueLists()}, false, dueBatch)
	if err != nil || len(reply) == 0 {
		s.wake.Store(0) // unknown: any report wakes the loop
		return loopSleep
	}
	now, _ := reply[0].(int64)
	sleep := loopSleep
	if len(reply) == 1+2*dueBatch {
		sleep = 0 // more may be due
	}
	for i := 1; i+1 < len(reply); i += 2 {
		name, _ := reply[i].(string)
		score, _ := reply[i+1].(string)
		due, _ := strconv.ParseFloat(score, 64)
		if int64(due) > now {
			sleep = min(max(time.Duration(int64(due)-now)*time.Millisecond, loopRest), loopSleep)
			break
		}
		s.visit(ctx, name, score)
	}
	s.wake.Store(now + sleep.Milliseconds())
	return sleep
}

// visit gives back what has run out in list name and reports the list's truth to the schedule,
// where the loop saw it due with the score seen.
func (s *Store) visit(ctx context.Context, name, seen string) {
	reply, err := s.runList(ctx, expireScript, s.keysOf(name), nil, nil, true, s.channel(), name)
	if err != nil {
		return
	}
	_ = s.schedule(ctx, name, reply[1], seen)
	if reply[3] == int64(1) {
		_ = s.deadLetter(ctx, name)
	}
	if len(reply) > 4 && reply[4] == int64(1) {
		// Garbage left (a server that dropped it died before emptying it): this one empties it.
		s.inBackground("garbage", name, s.collect)
	}
}

// sweep reports the due time of every list that has one again, for those a server that died
// between a script and its report left out of the schedule, and makes due at once the lists
// whose chores or garbage it left: the registry a page at a time, a pipeline per page.
func (s *Store) sweep(ctx context.Context) {
	names, err := s.listNames(ctx)
	if err != nil {
		return
	}
	for page := range slices.Chunk(names, registryPage) {
		pipe := s.client.Pipeline()
		dues := make([]*goredis.StringCmd, len(page))
		chores := make([]*goredis.IntCmd, len(page))
		for i, name := range page {
			k := s.keysOf(name)
			dues[i] = pipe.HGet(ctx, k.meta(), "due")
			chores[i] = pipe.Exists(ctx, k.chores(), k.garbage())
		}
		_, _ = pipe.Exec(ctx)
		for i, name := range page {
			if chores[i].Val() > 0 {
				_ = s.schedule(ctx, name, 0, "")
			} else if due, err := dues[i].Result(); err == nil {
				_ = s.schedule(ctx, name, due, "")
			}
		}
	}
}

// BindRequest implements store.Store: a key of its own, set if absent. The ids this server bound
// last are remembered (bindings), so that the retries it receives need no round trip before their
// change: a retry meant to find a lost reply's outcome does not fail on the binding first.
func (s *Store) BindRequest(ctx context.Context, r store.Request) error {
	if s.bindings.holds(r) {
		return nil
	}
	key := s.requestKey(r.ID)
	set, err := s.cmd.SetNX(ctx, key, r.Fingerprint, max(r.Window, time.Millisecond)).Result()
	if err != nil {
		return s.failure(err)
	}
	if !set {
		bound, err := s.cmd.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, goredis.Nil):
			return s.BindRequest(ctx, r) // its window ended between the two commands
		case err != nil:
			return s.failure(err)
		case !r.Same(bound):
			return store.ErrRequestReused
		}
	}
	s.bindings.add(r)
	return nil
}
