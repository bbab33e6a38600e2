package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Memory is the in-memory Store. The map of lists has its own lock, held only to look a list up
// or create it; each list has its own lock, so operations on different lists never wait for each
// other. Reads and adds at either end cost O(1) (amortised), a random read O(log n), a Find its
// scan plus O(log n) for the hit, and a unique add O(1). Create one with New.
type Memory struct {
	mu      sync.RWMutex
	lists   map[string]*list
	pending map[string]*list // lists that reads wait for and nobody created (wait.go): not keys
	intN    func(n int) int  // picks Random indexes; tests put a seeded source here
	limits  store.Limits

	// recorder, when set, gets a record of every change (change.go).
	recorder Recorder

	leases   leaseBook   // lease.go
	requests requestBook // requests.go

	bytes      atomic.Int64  // the bytes of all lines, reserved before a list grows (limits.go)
	waiting    atomic.Int64  // reads waiting for lines
	gate       chan struct{} // tokens for the matches of waiting FINDs (wait.go)
	waitsEnded chan struct{}
	endWaits   sync.Once
}

var (
	_ store.Store = (*Memory)(nil)
	_ store.Sizer = (*Memory)(nil)
)

// Option configures a Memory.
type Option func(*Memory)

// WithLimits bounds what the store holds.
func WithLimits(l store.Limits) Option { return func(m *Memory) { m.limits = l } }

// New returns an empty store.
func New(options ...Option) *Memory {
	m := &Memory{lists: map[string]*list{}, pending: map[string]*list{}, intN: rand.IntN, waitsEnded: make(chan struct{}),
		gate: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}
	for _, o := range options {
		o(m)
	}
	return m
}

// lookup returns the list called name, or nil.
func (m *Memory) lookup(name string) *list {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.lists[name]
}

// lookupOrCreate returns the list called name, creating an empty one if needed (or making the
// pending list that reads wait for a real one); created says it did. It checks no limit: a
// restore brings back the lists that were there.
func (m *Memory) lookupOrCreate(name string) (l *list, created bool) {
	l, created, _ = m.getOrCreate(name, false)
	return l, created
}

// lookupOrCreateLimited is lookupOrCreate for a client's change: creating a list beyond
// Limits.MaxLists is refused with a *store.LimitError, exactly, since the count is checked under
// the map's lock.
func (m *Memory) lookupOrCreateLimited(name string) (*list, bool, error) {
	return m.getOrCreate(name, true)
}

func (m *Memory) getOrCreate(name string, limited bool) (l *list, created bool, err error) {
	if l := m.lookup(name); l != nil {
		return l, false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.lists[name]; l != nil {
		return l, false, nil
	}
	if max := m.limits.MaxLists; limited && max > 0 && int64(len(m.lists)) >= max {
		return nil, false, &store.LimitError{Limit: store.LimitLists, Max: max}
	}
	cost := int64(store.ListOverhead + len(name))
	if !limited {
		m.bytes.Add(cost)
	} else if err := m.admit(0, cost); err != nil {
		return nil, false, err
	}
	if l = m.pending[name]; l != nil {
		delete(m.pending, name)
		l.mu.Lock()
		l.pending = false
		l.mu.Unlock()
	} else {
		l = newList(name)
	}
	m.lists[name] = l
	return l, true, nil
}

// Length implements store.Store.
func (m *Memory) Length(_ context.Context, name string) (int, error) {
	l := m.lookup(name)
	if l == nil {
		return 0, store.ErrNotLoaded
	}
	l.mu.Lock()
	n, c := l.lines.len(), l.settled()
	l.mu.Unlock()
	// READ answers "No more line" from a zero length: it must not count a consume still being
	// recorded. Other lengths are as of now, like STATUS, so that reads of a busy list do not
	// wait for each other's records.
	if n == 0 {
		if err := durable(c); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// takeRequest is a read: n lines at pos (READ, READMULTI), or the first line match accepts
// (FIND); keep appends what it took to the end.
type takeRequest struct {
	pos   store.Position
	n     int
	match func(string) (bool, error)
	keep  bool
	lease *leaseOrder // nil: no lease
	// request, when not nil, is the client's store.Request: takeLocked answers its recorded
	// outcome, or records the one it makes.
	request *store.Request
	// client, set for a client's FIND, whose regular expression may be slow, makes it test lines
	// off the list's lock and through the store's gate (scan.go), giving up when client ends;
	// missed then gets the lines added at the front meanwhile.
	client context.Context
	missed []string
}

// Read implements store.Store.
func (m *Memory) Read(ctx context.Context, name string, pos store.Position, n int, keep bool, wait time.Duration) ([]string, error) {
	return m.read(ctx, name, takeRequest{pos: pos, n: n, keep: keep}, wait)
}

// read is Read, or ReadLeased with a lease order: req's pos, n, keep and lease.
func (m *Memory) read(ctx context.Context, name string, req takeRequest, wait time.Duration) ([]string, error) {
	if req.pos != store.First && req.pos != store.Last && req.pos != store.Random {
		return nil, fmt.Errorf("store: unknown read position %d", req.pos)
	}
	if req.n < 1 {
		return nil, fmt.Errorf("store: cannot read %d lines", req.n)
	}
	return m.takeOnce(ctx, name, req, wait)
}

// takeOnce runs a read (take) under the Request ctx carries, if any.
func (m *Memory) takeOnce(ctx context.Context, name string, req takeRequest, wait time.Duration) ([]string, error) {
	if err := m.writable(); err != nil {
		return nil, err
	}
	o, err := m.once(ctx, func(r *store.Request) (*outcome, error) {
		req.request = r
		lines, err := m.take(ctx, name, req, wait)
		return &outcome{lines: lines}, err
	})
	if err != nil {
		return nil, err
	}
	if req.lease != nil && o.lease != "" { // a lease recalled rather than given now
		req.lease.id, req.lease.expires = o.lease, o.expires
	}
	return o.lines, nil
}

// Find implements store.Store.
func (m *Memory) Find(ctx context.Context, name string, match store.Matcher, keep bool, wait time.Duration) (string, error) {
	lines, err := m.takeOnce(ctx, name, takeRequest{match: match, keep: keep, client: ctx}, wait)
	if err != nil {
		return "", err
	}
	return lines[0], nil
}

// takeLocked runs req on l, which must be locked: it returns the lines taken and the Commit of
// the change, or the error that a read meets when the list cannot satisfy it with the Commit
// that error depends on (the list's last change).
func (m *Memory) takeLocked(l *list, req *takeRequest) ([]string, Commit, error) {
	if o, err := l.recallLocked(req.request); o != nil || err != nil {
		if o == nil {
			return nil, l.settled(), err
		}
		if req.lease != nil {
			req.lease.id, req.lease.expires = o.lease, o.expires
		}
		return o.lines, l.settled(), nil
	}
	if l.pending {
		return nil, l.settled(), store.ErrNotLoaded
	}
	size := l.lines.len()
	if size == 0 {
		return nil, l.settled(), store.ErrEmpty
	}
	hit := 0
	if req.match != nil {
		var err error
		if hit, err = m.findLocked(l, req); err != nil {
			return nil, l.settled(), err
		}
	} else if req.n > size {
		return nil, l.settled(), &store.ShortListError{Want: req.n, Have: size}
	}
	lease := int64(0) // the lease's own cost, admitted before the change
	if req.lease != nil {
		lease = int64(store.LeaseOverhead + len(req.lease.id))
		if err := m.admit(0, lease); err != nil {
			return nil, l.settled(), err
		}
	}
	m.begin(l)
	before := l.size()
	var picked []string
	if req.match != nil {
		picked = []string{l.remove(hit)}
	} else {
		picked = make([]string, req.n)
		for i := range picked {
			picked[i] = l.remove(m.index(req.pos, l.lines.len()))
		}
	}
	switch {
	case req.keep:
		l.keep(picked)
	case req.lease != nil:
		m.holdLocked(l, picked, req.lease)
	default:
		l.consumed(picked)
	}
	m.bytes.Add(l.size() - before - lease)
	o := &outcome{lines: picked}
	if req.lease != nil {
		o.lease, o.expires = req.lease.id, req.lease.expires
	}
	m.record(l, req.request, o)
	return picked, m.commit(l, false), nil
}

// findLocked returns the index of the first line of l (locked) that req.match accepts, testing
// off the lock for a client's FIND, or the error a FIND without a hit meets.
func (m *Memory) findLocked(l *list, req *takeRequest) (int, error) {
	if req.client != nil {
		hit, missed, err := m.scan(l, req)
		req.missed = missed
		switch {
		case err != nil:
			return 0, err
		case hit < 0:
			return 0, unmatched(l)
		}
		return hit, nil
	}
	hit := 0
	for line := range l.lines.all() {
		ok, err := req.match(line)
		if err != nil {
			return 0, err
		}
		if ok {
			return hit, nil
		}
		hit++
	}
	return 0, store.ErrNoMatch
}

// index picks the index a read at pos takes from a list of size lines.
func (m *Memory) index(pos store.Position, size int) int {
	switch pos {
	case store.First:
		return 0
	case store.Last:
		return size - 1
	default:
		return m.intN(size)
	}
}

// Add implements store.Store.
func (m *Memory) Add(ctx context.Context, name, line string, pos store.Position, unique bool) error {
	_, err := m.once(ctx, func(r *store.Request) (*outcome, error) {
		if err := m.writable(); err != nil {
			return nil, err
		}
		l, created, err := m.lookupOrCreateLimited(name)
		if err != nil {
			return nil, err
		}
		return m.bring(l, created, []string{line}, r, func(*outcome) error { return m.addLocked(l, line, pos, unique) })
	})
	return err
}

// bring runs apply, a change that brings lines to l (Add, Insert, Replace), as one recorded change
// under l's lock: apply checks the limits and changes the list, or fails and changes nothing,
// unless r's outcome is recorded in l already, which is then the answer. The reads waiting on the
// list are then offered the lines, before the lock is let go; bring returns once the change is
// durable, with the outcome apply filled in and apply's error.
func (m *Memory) bring(l *list, created bool, lines []string, r *store.Request, apply func(*outcome) error) (*outcome, error) {
	l.mu.Lock()
	o, err := l.recallLocked(r)
	if o != nil || err != nil {
		c := l.settled()
		l.mu.Unlock()
		if recErr := durable(c); recErr != nil {
			return nil, recErr
		}
		return o, err
	}
	o = &outcome{}
	m.begin(l)
	if err = apply(o); err == nil {
		m.record(l, r, o)
	}
	c := m.commit(l, created)
	if err == nil && len(lines) > 0 && len(l.waiters) > 0 {
		m.serveWaiters(l, lines)
	}
	l.mu.Unlock()
	if recErr := durable(c); recErr != nil {
		return nil, recErr
	}
	return o, err
}

func (m *Memory) addLocked(l *list, line string, pos store.Position, unique bool) error {
	if pos != store.First && pos != store.Last {
		return fmt.Errorf("store: cannot add at position %d, only store.First or Last", pos)
	}
	if unique && l.counts == nil {
		// The index takes an entry a distinct line: admitted for every line before it is built,
		// as the line is, and settled to the distinct ones when the change is committed.
		grow := int64(l.held()) * store.UniqueOverhead
		if err := m.admit(l.held(), grow); err != nil {
			return err
		}
		l.countsCharged += grow
	}
	if unique && l.contains(line) {
		return store.ErrDuplicate
	}
	if limit := m.limits.MaxLineBytes; limit > 0 && int64(len(line)) > limit {
		return &store.LimitError{Limit: store.LimitLineBytes, Max: limit}
	}
	if err := m.recordable(l.name, []string{line}); err != nil {
		return err
	}
	if err := m.admit(l.held()+1, store.LineCost(line)); err != nil {
		return err
	}
	l.insert(line, pos)
	return nil
}

// Insert implements store.Store.
func (m *Memory) Insert(ctx context.Context, name string, lines []string, pos store.Position) error {
	if pos != store.First && pos != store.Last {
		return fmt.Errorf("store: cannot insert at position %d, only store.First or Last", pos)
	}
	_, err := m.once(ctx, func(r *store.Request) (*outcome, error) {
		return m.bringLines(name, lines, true, r, nil, func(l *list, _ int64, _ *outcome) { l.insertAll(lines, pos) })
	})
	return err
}

// bringLines makes one change that brings lines, of size bytes, to the list called name (Insert,
// Replace, Reload, LoadOnce), creating it if needed, within the limits: the list keeps its lines
// or loses them (keepOld), and put adds the new ones. A refused change creates no list. wanted,
// when not nil, decides under the list's lock whether the change is made at all, knowing whether
// this call created the list.
func (m *Memory) bringLines(name string, lines []string, keepOld bool, r *store.Request, wanted func(l *list, created bool) bool, put func(l *list, size int64, o *outcome)) (*outcome, error) {
	if err := m.writable(); err != nil {
		return nil, err
	}
	size, err := m.limits.Measure(lines)
	if err != nil {
		return nil, err
	}
	if err := m.recordable(name, lines); err != nil {
		return nil, err
	}
	l, created, reserved, err := m.lookupOrReserve(name, len(lines), size)
	if err != nil {
		return nil, err
	}
	return m.bring(l, created, lines, r, func(o *outcome) error {
		if wanted != nil && !wanted(l, created) {
			m.bytes.Add(-reserved)
			return nil
		}
		count, grow := l.leasedLines+len(lines), size-l.bytes
		if keepOld {
			count, grow = l.held()+len(lines), size
		}
		if err := m.readmit(count, grow, reserved); err != nil {
			return err
		}
		put(l, size, o)
		return nil
	})
}

// Ensure implements store.Store.
func (m *Memory) Ensure(_ context.Context, name string) error {
	if err := m.writable(); err != nil {
		return err
	}
	l, created, err := m.lookupOrCreateLimited(name)
	if err != nil || !created {
		return err
	}
	l.mu.Lock()
	m.begin(l)
	c := m.commit(l, true)
	l.mu.Unlock()
	return durable(c)
}

// Replace implements store.Store.
func (m *Memory) Replace(ctx context.Context, name string, lines []string, digest string) error {
	_, err := m.once(ctx, func(r *store.Request) (*outcome, error) {
		return m.bringLines(name, lines, false, r, nil, func(l *list, size int64, _ *outcome) {
			l.replace(lines, size)
			l.digest = digest
		})
	})
	return err
}

// Reload implements store.Store: each lease is acknowledged as a whole, then the content
// replaced, in one record.
func (m *Memory) Reload(ctx context.Context, name string, lines []string, digest string) (int, error) {
	o, err := m.once(ctx, func(r *store.Request) (*outcome, error) {
		return m.bringLines(name, lines, false, r, nil, func(l *list, size int64, o *outcome) {
			o.n = m.endLeasesLocked(l)
			l.replace(lines, size)
			l.digest = digest
		})
	})
	if err != nil {
		return 0, err
	}
	return o.n, nil
}

// LoadOnce implements store.Store: it loads a list that this call creates, and keeps any other,
// restored from the journal or created since the caller looked.
func (m *Memory) LoadOnce(_ context.Context, name string, lines []string, digest string) (bool, string, error) {
	loaded, held := false, ""
	_, err := m.bringLines(name, lines, false, nil, func(l *list, created bool) bool {
		loaded, held = created, l.digest
		return loaded
	}, func(l *list, size int64, _ *outcome) {
		l.replace(lines, size)
		l.digest, held = digest, digest
	})
	return loaded, held, err
}

// Lines implements store.Store.
func (m *Memory) Lines(_ context.Context, name string) ([]string, error) {
	l := m.lookup(name)
	if l == nil {
		return nil, store.ErrNotLoaded
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.AppendSeq(make([]string, 0, l.lines.len()), l.lines.all()), nil
}

// Page implements store.Store: under the list's lock, it copies the n lines only (the chunks'
// index finds the offset in O(log n)), so a page of a long list costs what the page costs.
func (m *Memory) Page(_ context.Context, name string, offset, n int) ([]string, int, error) {
	if err := store.CheckPage(offset, n); err != nil {
		return nil, 0, err
	}
	l := m.lookup(name)
	if l == nil {
		return nil, 0, store.ErrNotLoaded
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	page := make([]string, 0, max(0, min(n, l.lines.len()-offset)))
	for line := range l.lines.from(offset) {
		if len(page) == n {
			break
		}
		page = append(page, line)
	}
	return page, l.lines.len(), nil
}

// Reset implements store.Store.
func (m *Memory) Reset(ctx context.Context, name string) (bool, error) {
	o, err := m.once(ctx, func(r *store.Request) (*outcome, error) {
		if err := m.writable(); err != nil {
			return nil, err
		}
		l := m.lookup(name)
		if l == nil {
			return &outcome{}, nil
		}
		l.mu.Lock()
		return m.changeLocked(l, r, func(o *outcome) {
			o.n = 1
			if l.lines.len() > 0 {
				m.bytes.Add(-l.bytes)
				l.replace(nil, 0)
			}
		})
	})
	if err != nil {
		return false, err
	}
	return o.n == 1, nil
}

// sortedLists returns every list, sorted by name. The map lock is let go before the caller takes
// the list locks, one at a time, so that a slow Find on one list never holds up the creation of
// another; what the caller reads is therefore not one instant's state of every list.
func (m *Memory) sortedLists() []*list {
	m.mu.RLock()
	all := make([]*list, 0, len(m.lists))
	for _, l := range m.lists {
		all = append(all, l)
	}
	m.mu.RUnlock()
	slices.SortFunc(all, func(a, b *list) int { return strings.Compare(a.name, b.name) })
	return all
}

// Lists implements store.Store. The lists are read one at a time (sortedLists).
func (m *Memory) Lists(context.Context) ([]store.ListInfo, error) {
	all := m.sortedLists()
	infos := make([]store.ListInfo, len(all))
	for i, l := range all {
		l.mu.Lock()
		infos[i] = store.ListInfo{Name: l.name, Length: l.lines.len(), Digest: l.digest,
			Leased: l.leasedLines, Returned: l.returned, DeadLettered: l.deadLettered}
		l.mu.Unlock()
	}
	return infos, nil
}

// Close implements store.Store: it ends the waits; a Memory holds nothing else.
func (m *Memory) Close() error {
	m.EndWaits()
	return nil
}

// Bytes implements store.Sizer.
func (m *Memory) Bytes() int64 { return m.bytes.Load() }
