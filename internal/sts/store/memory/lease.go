package memory

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Leases (store/lease.go). A leased read removes its lines from the list through remove, as a
// consuming read does, and then holds them in a lease of the list (lease), which keeps their
// bytes in the store's total and their place in the list's limits and UNIQUE counts: giving them
// back never needs an admission that could be refused. A lease ends in one of three ways, each a
// step of the list's change record (change.go): acknowledged (opAck), given back (opReturn, then
// the lines inserted as any other) or extended (opExtend). Its expiry is a wall-clock instant,
// journaled, so that a restarted server expires it when it would have; a timer per lease
// (time.AfterFunc, which costs a heap entry, no goroutine) gives the lines back then.

// lease is lines of a list held under a lease.
type lease struct {
	id            string
	lines         []string
	expires       time.Time
	maxDeliveries int
	timer         *time.Timer // nil until armed
}

// leaseOrder asks a read to hold what it takes under a lease; takeLocked fills in expires. It is
// shared by the copies of a takeRequest, so that the read learns the expiry whichever copy served
// it.
type leaseOrder struct {
	spec    store.LeaseSpec
	id      string
	expires time.Time
}

// leaseBook is the store-wide index of leases: the list of each running one, so that an id alone
// finds it, and how the ones that ended without an acknowledgement ended, for store.LeaseMemory
// and at most maxEnded of them, so that a late Ack is told why.
type leaseBook struct {
	mu      sync.Mutex
	running map[string]*list
	ended   map[string]string // id → store.LeaseExpired or LeaseReleased
	order   []endedLease      // ended, oldest first
}

type endedLease struct {
	id string
	at time.Time
}

// maxEnded bounds the ended leases remembered: a busy server whose clients let leases run out
// would otherwise keep every id for LeaseMemory.
const maxEnded = 1 << 17

func (b *leaseBook) start(id string, l *list) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running == nil {
		b.running, b.ended = map[string]*list{}, map[string]string{}
	}
	b.running[id] = l
}

// end forgets the running lease id; with how, it remembers how it ended.
func (b *leaseBook) end(id, how string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.running, id)
	if how == "" {
		return
	}
	now := time.Now()
	for len(b.order) > 0 && (len(b.order) >= maxEnded || now.Sub(b.order[0].at) > store.LeaseMemory) {
		delete(b.ended, b.order[0].id)
		b.order = b.order[1:]
	}
	b.ended[id] = how
	b.order = append(b.order, endedLease{id, now})
}

// find returns the list of the running lease id, or the error an Ack of id meets.
func (b *leaseBook) find(id string) (*list, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.running[id]; l != nil {
		return l, nil
	}
	if how := b.ended[id]; how != "" {
		return nil, &store.LeaseEndedError{ID: id, How: how}
	}
	return nil, store.ErrLeaseNotFound
}

// ReadLeased implements store.Store.
func (m *Memory) ReadLeased(ctx context.Context, name string, pos store.Position, n int, spec store.LeaseSpec, wait time.Duration) (store.Lease, error) {
	if err := m.prepareLease(ctx, name, spec); err != nil {
		return store.Lease{}, err
	}
	order := &leaseOrder{spec: spec, id: store.NewLeaseID()}
	lines, err := m.read(ctx, name, takeRequest{pos: pos, n: n, lease: order}, wait)
	return order.result(name, lines, err)
}

// FindLeased implements store.Store.
func (m *Memory) FindLeased(ctx context.Context, name string, match store.Matcher, spec store.LeaseSpec, wait time.Duration) (store.Lease, error) {
	if err := m.prepareLease(ctx, name, spec); err != nil {
		return store.Lease{}, err
	}
	order := &leaseOrder{spec: spec, id: store.NewLeaseID()}
	lines, err := m.takeOnce(ctx, name, takeRequest{match: match, lease: order, client: ctx}, wait)
	return order.result(name, lines, err)
}

// prepareLease checks spec and creates the dead-letter list a lease of list name may send lines
// to, within Limits.MaxLists: a read that could need a list there is no room for is refused before
// it takes a line, rather than the dead letters making lists beyond the limit (or being lost).
func (m *Memory) prepareLease(ctx context.Context, name string, spec store.LeaseSpec) error {
	if err := spec.Check(); err != nil {
		return err
	}
	if spec.MaxDeliveries == 0 || store.IsDeadLetterList(name) {
		return nil
	}
	return m.Ensure(ctx, store.DeadLetterList(name))
}

func (o *leaseOrder) result(name string, lines []string, err error) (store.Lease, error) {
	if err != nil {
		return store.Lease{}, err
	}
	return store.Lease{ID: o.id, List: name, Lines: lines, Expires: o.expires}, nil
}

// holdLocked puts picked, just removed from l (locked) by a read, under the lease order asks for.
// A lease of a dead-letter list never dead-letters: a line is not sent to x.dead.dead.
func (m *Memory) holdLocked(l *list, picked []string, order *leaseOrder) {
	order.expires = time.Now().Add(order.spec.TTL).Truncate(time.Millisecond)
	le := &lease{id: order.id, lines: slices.Clone(picked), expires: order.expires, maxDeliveries: order.spec.MaxDeliveries}
	if store.IsDeadLetterList(l.name) {
		le.maxDeliveries = 0
	}
	l.hold(le)
	if l.recording {
		l.change = appendLease(l.change, le)
	}
	m.leases.start(le.id, l)
	m.arm(l, le)
}

// arm starts le's timer, which gives its lines back when it expires.
func (m *Memory) arm(l *list, le *lease) {
	id := le.id
	le.timer = time.AfterFunc(time.Until(le.expires), func() { m.expire(l, id) })
}

// expire gives back the lines of lease id of l if it has run out. A timer that fires early (the
// lease was extended meanwhile) is set again; one that finds the journal unable to write tries
// again a second later, since giving lines back is a change it must record.
func (m *Memory) expire(l *list, id string) {
	l.mu.Lock()
	le := l.leases[id]
	if le == nil {
		l.mu.Unlock()
		return
	}
	if left := time.Until(le.expires); left > 0 {
		le.timer.Reset(left)
		l.mu.Unlock()
		return
	}
	if m.writable() != nil {
		le.timer.Reset(time.Second)
		l.mu.Unlock()
		return
	}
	m.begin(l)
	back := m.giveBack(l, le, -1, store.First, store.LeaseExpired)
	m.commit(l, false)
	if len(back) > 0 && len(l.waiters) > 0 {
		m.serveWaiters(l, back)
	}
	l.mu.Unlock()
}

// giveBack ends lease le of l (locked), or only its line at index which when which ≥ 0, without
// an acknowledgement: each line's return is counted, and it goes back to the list at pos, or to
// the dead letters once it has been back le.maxDeliveries times. It returns the lines that went
// back to l. The dead letters are added first, as their own change, so that a crash between the
// two records can only add a line to them twice, never lose it.
func (m *Memory) giveBack(l *list, le *lease, which int, pos store.Position, how string) []string {
	if l.recording {
		l.change = appendReturn(l.change, le.id, which, how)
	}
	before := l.size()
	back, dead := l.giveBack(le, which)
	if len(dead) > 0 {
		m.deadLetter(l.name, dead)
	}
	if len(le.lines) == 0 {
		m.leases.end(le.id, how)
	}
	l.insertAll(back, pos)
	// The dead letters' cost moved to their list, which deadLetter does not count; the lease's
	// own cost is freed.
	moved := int64(0)
	for _, line := range dead {
		moved += store.LineCost(line)
	}
	m.bytes.Add(l.size() - before + moved)
	return back
}

// deadLetter appends lines to the dead-letter list of the list called name, creating it: no limit
// applies, since the lines already count in the store's bytes, and refusing would lose them.
func (m *Memory) deadLetter(name string, lines []string) {
	dl, created := m.lookupOrCreate(store.DeadLetterList(name))
	dl.mu.Lock()
	m.begin(dl)
	for _, line := range lines {
		dl.insert(line, store.Last)
	}
	m.commit(dl, created)
	if len(dl.waiters) > 0 {
		m.serveWaiters(dl, lines)
	}
	dl.mu.Unlock()
}

// leaseOf returns the list of the lease ref names, locked, with the lease and, for a ref by line,
// the index of the line in it (-1 by id).
func (m *Memory) leaseOf(ref store.LeaseRef) (*list, *lease, int, error) {
	if ref.ID != "" {
		l, err := m.leases.find(ref.ID)
		if err != nil {
			return nil, nil, 0, err
		}
		l.mu.Lock()
		if le := l.leases[ref.ID]; le != nil {
			return l, le, -1, nil
		}
		l.mu.Unlock()
		// It ended between the two looks.
		_, err = m.leases.find(ref.ID)
		return nil, nil, 0, err
	}
	l := m.lookup(ref.List)
	if l == nil {
		return nil, nil, 0, store.ErrLeaseNotFound
	}
	l.mu.Lock()
	var found *lease
	which := -1
	for _, le := range l.leases {
		if i := slices.Index(le.lines, ref.Line); i >= 0 && (found == nil || le.expires.Before(found.expires)) {
			found, which = le, i
		}
	}
	if found == nil {
		l.mu.Unlock()
		return nil, nil, 0, store.ErrLeaseNotFound
	}
	return l, found, which, nil
}

// changeLease runs change on the lease ref names, under its list's lock, as one recorded
// operation made once under the Request ctx carries, and returns its outcome once it is durable.
func (m *Memory) changeLease(ctx context.Context, ref store.LeaseRef, change func(l *list, le *lease, which int, o *outcome)) (*outcome, error) {
	return m.once(ctx, func(r *store.Request) (*outcome, error) {
		if err := m.writable(); err != nil {
			return nil, err
		}
		l, le, which, err := m.leaseOf(ref)
		if err != nil {
			return nil, err
		}
		return m.changeLocked(l, r, func(o *outcome) { change(l, le, which, o) })
	})
}

// Ack implements store.Store.
func (m *Memory) Ack(ctx context.Context, ref store.LeaseRef) error {
	_, err := m.changeLease(ctx, ref, func(l *list, le *lease, which int, _ *outcome) {
		if l.recording {
			l.change = appendAck(l.change, le.id, which)
		}
		before := l.size()
		l.ack(le, which)
		m.bytes.Add(l.size() - before)
		if len(le.lines) == 0 {
			m.leases.end(le.id, "")
		}
	})
	return err
}

// Release implements store.Store.
func (m *Memory) Release(ctx context.Context, ref store.LeaseRef, pos store.Position) error {
	if pos != store.First && pos != store.Last {
		return store.ErrBadLease
	}
	_, err := m.changeLease(ctx, ref, func(l *list, le *lease, which int, _ *outcome) {
		back := m.giveBack(l, le, which, pos, store.LeaseReleased)
		if len(back) > 0 && len(l.waiters) > 0 {
			m.serveWaiters(l, back)
		}
	})
	if errors.As(err, new(*store.LeaseEndedError)) {
		return nil // released or expired already: the lines are back, as asked
	}
	return err
}

// Extend implements store.Store.
func (m *Memory) Extend(ctx context.Context, ref store.LeaseRef, ttl time.Duration) (time.Time, error) {
	if ttl <= 0 {
		return time.Time{}, store.ErrBadLease
	}
	o, err := m.changeLease(ctx, ref, func(l *list, le *lease, _ int, o *outcome) {
		le.expires = time.Now().Add(ttl).Truncate(time.Millisecond)
		o.expires = le.expires
		if l.recording {
			l.change = appendExtend(l.change, le.id, le.expires)
		}
		if le.timer != nil {
			le.timer.Reset(ttl)
		}
	})
	if err != nil {
		return time.Time{}, err
	}
	return o.expires, nil
}

// endLeasesLocked acknowledges every lease of l (locked, its change begun) as a whole, and returns
// how many lines they held.
func (m *Memory) endLeasesLocked(l *list) int {
	ended, before := l.leasedLines, l.size()
	for _, le := range l.leases {
		if l.recording {
			l.change = appendAck(l.change, le.id, -1)
		}
		l.ack(le, -1)
		m.leases.end(le.id, "")
	}
	m.bytes.Add(l.size() - before)
	return ended
}
