package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Requests a client may send again (store/request.go). The outcome of a change made under a
// store.Request is kept by the list it changed (list.outcomes), written under the list's lock by
// the operation itself and recorded in the operation's own change record (opOutcome), so that the
// change and its outcome reach the journal, and a snapshot, together: a server killed after the
// change and before its answer finds the outcome again once restored. The requestBook, store-wide,
// finds the list of an outcome by the request's id alone (an ACK by lease id names no list), and
// holds the bindings of BindRequest.
//
// Lock order: a list's mu, then the book's mu; the book's is never held while a list's is taken.

// outcome is what a change made under a Request gave its client: what the store methods return,
// in one shape for all of them.
type outcome struct {
	list        string
	fingerprint []byte
	forget      time.Time // the end of the request's window
	lines       []string  // Read, Find, ReadLeased, FindLeased
	lease       string    // ReadLeased, FindLeased: the lease given
	expires     time.Time // ReadLeased, FindLeased, Extend: the lease's expiry
	n           int       // Reset: 1 the list existed; Reload: the leased lines ended
	cost        int64     // against Limits.MaxTotalBytes
}

// requestBook indexes the outcomes by request id and binds ids to fingerprints, in this process.
// Its bindings are not journaled: a restarted server refuses an id reused on the same list (the
// outcome holds the fingerprint), not one reused on another list within the window.
type requestBook struct {
	mu       sync.Mutex
	lists    map[string]*list // request id → the list holding its outcome
	bindings map[string]*binding
	order    []*binding // by binding, oldest first
	bytes    int64
}

type binding struct {
	id          string
	fingerprint []byte
	forget      time.Time
}

// maxBindingBytes bounds the bindings a requestBook keeps: clients sending an id with every
// request cannot grow it without bound; past it, the oldest are forgotten first.
const maxBindingBytes = 16 << 20

// BindRequest implements store.Store.
func (m *Memory) BindRequest(_ context.Context, r store.Request) error {
	b := &m.requests
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.forget(now)
	if e := b.bindings[r.ID]; e != nil && now.Before(e.forget) {
		if !r.Same(e.fingerprint) {
			return store.ErrRequestReused
		}
		return nil
	}
	if b.bindings == nil {
		b.bindings = map[string]*binding{}
	}
	e := &binding{id: r.ID, fingerprint: r.Fingerprint, forget: now.Add(r.Window)}
	b.bindings[r.ID] = e
	b.order = append(b.order, e)
	b.bytes += int64(len(e.id) + len(e.fingerprint))
	return nil
}

// forget drops the bindings whose window has ended, and the oldest while the book is over its
// bound.
func (b *requestBook) forget(now time.Time) {
	drop := 0
	for _, e := range b.order {
		if b.bytes <= maxBindingBytes && now.Before(e.forget) {
			break
		}
		if b.bindings[e.id] == e {
			delete(b.bindings, e.id)
		}
		b.bytes -= int64(len(e.id) + len(e.fingerprint))
		drop++
	}
	b.order = b.order[drop:]
}

func (b *requestBook) listOf(id string) *list {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lists[id]
}

func (b *requestBook) index(id string, l *list) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lists == nil {
		b.lists = map[string]*list{}
	}
	b.lists[id] = l
}

func (b *requestBook) unindex(id string, l *list) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lists[id] == l {
		delete(b.lists, id)
	}
}

// recallLocked returns the outcome l (locked) holds for r, nil when it holds none, or
// store.ErrRequestReused when the id came with another request.
func (l *list) recallLocked(r *store.Request) (*outcome, error) {
	if r == nil {
		return nil, nil
	}
	o := l.outcomes[r.ID]
	switch {
	case o == nil || !time.Now().Before(o.forget):
		return nil, nil
	case !r.Same(o.fingerprint):
		return nil, store.ErrRequestReused
	}
	return o, nil
}

// recall returns the outcome recorded for r anywhere in the store, or nil.
func (m *Memory) recall(r store.Request) (*outcome, error) {
	l := m.requests.listOf(r.ID)
	if l == nil {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recallLocked(&r)
}

// once makes change, which records its outcome under the Request that ctx carries (if any) as
// it makes it, unless that Request's outcome is recorded already: then that is the answer. A
// change that fails looks again, since an equal request may have made it meanwhile (an ACK of
// the lease it just ended would otherwise answer that the lease is not found).
func (m *Memory) once(ctx context.Context, change func(r *store.Request) (*outcome, error)) (*outcome, error) {
	r, ok := store.RequestFrom(ctx)
	if !ok {
		return change(nil)
	}
	if o, err := m.recall(r); o != nil || err != nil {
		return o, err
	}
	// The outcome's own cost is admitted before the change, so that changes that free memory
	// (a consuming READ) cannot grow outcomes past the budget; record counts the whole outcome
	// once the change is made.
	reserved := store.OutcomeCost(r, nil)
	if err := m.admit(0, reserved); err != nil {
		return nil, err
	}
	o, err := change(&r)
	m.bytes.Add(-reserved)
	if err != nil {
		if prior, recallErr := m.recall(r); prior != nil || recallErr != nil {
			return prior, recallErr
		}
	}
	return o, err
}

// changeLocked makes change to l, locked (and unlocked on return), as one recorded operation
// under request r, unless r's outcome is recorded in l already, and returns the outcome once
// durable.
func (m *Memory) changeLocked(l *list, r *store.Request, change func(o *outcome)) (*outcome, error) {
	o, err := l.recallLocked(r)
	if o == nil && err == nil {
		o = &outcome{}
		m.begin(l)
		change(o)
		m.record(l, r, o)
		m.commit(l, false)
	}
	c := l.settled()
	l.mu.Unlock()
	if recErr := durable(c); recErr != nil {
		return nil, recErr
	}
	return o, err
}

// record keeps o as the outcome of r (nil: no request) in l, which must be locked and be making
// the change o describes, and adds it to the change's record.
func (m *Memory) record(l *list, r *store.Request, o *outcome) {
	if r == nil {
		return
	}
	now := time.Now()
	l.forgetOutcomes(now, m)
	o.list, o.fingerprint, o.forget = l.name, r.Fingerprint, now.Add(r.Window)
	o.cost = store.OutcomeCost(*r, o.lines)
	m.keepOutcome(l, r.ID, o)
	if l.recording {
		l.change = appendOutcome(l.change, r.ID, o)
	}
}

// keepOutcome puts o in l (locked) under id and indexes it.
func (m *Memory) keepOutcome(l *list, id string, o *outcome) {
	if l.outcomes == nil {
		l.outcomes = map[string]*outcome{}
	}
	if was, again := l.outcomes[id]; again {
		m.bytes.Add(-was.cost)
	} else {
		l.outcomeOrder = append(l.outcomeOrder, id)
	}
	l.outcomes[id] = o
	m.bytes.Add(o.cost) // counted, not admitted: the change it records is made
	m.requests.index(id, l)
}

// forgetOutcomes drops the outcomes of l (locked) whose window has ended. They are in the order
// they were recorded, and so of their ends, but for a window changed by a restart.
func (l *list) forgetOutcomes(now time.Time, m *Memory) {
	drop := 0
	for _, id := range l.outcomeOrder {
		o := l.outcomes[id]
		if o != nil && now.Before(o.forget) {
			break
		}
		if o != nil {
			m.bytes.Add(-o.cost)
		}
		delete(l.outcomes, id)
		m.requests.unindex(id, l)
		drop++
	}
	l.outcomeOrder = slices.Delete(l.outcomeOrder, 0, drop)
}

// appendOutcome is the opOutcome step: the request's id, the outcome's fingerprint, the end of
// its window (Unix ms), its lines, lease, lease expiry (Unix ms) and n.
func appendOutcome(b []byte, id string, o *outcome) []byte {
	return appendOutcomeFields(append(b, opOutcome), id, o)
}

func appendOutcomeFields(b []byte, id string, o *outcome) []byte {
	b = appendString(b, id)
	b = appendString(b, string(o.fingerprint))
	b = binary.AppendUvarint(b, uint64(o.forget.UnixMilli()))
	b = EncodeLines(b, o.lines)
	b = appendString(b, o.lease)
	b = binary.AppendUvarint(b, uint64(max(o.expires.UnixMilli(), 0)))
	return binary.AppendUvarint(b, uint64(o.n))
}

// readOutcome decodes an opOutcome step.
func readOutcome(s string) (string, *outcome, string, error) {
	o := &outcome{}
	id, s, err := readString(s)
	if err != nil {
		return "", nil, "", err
	}
	var fingerprint string
	if fingerprint, s, err = readString(s); err != nil {
		return "", nil, "", err
	}
	o.fingerprint = []byte(fingerprint)
	var forget, expires, n uint64
	if forget, s, err = readUvarint(s); err != nil {
		return "", nil, "", err
	}
	if o.lines, s, err = readLines(s); err != nil {
		return "", nil, "", err
	}
	if o.lease, s, err = readString(s); err != nil {
		return "", nil, "", err
	}
	for _, v := range []*uint64{&expires, &n} {
		if *v, s, err = readUvarint(s); err != nil {
			return "", nil, "", err
		}
	}
	o.forget, o.n = time.UnixMilli(int64(forget)), int(n)
	if expires > 0 {
		o.expires = time.UnixMilli(int64(expires))
	}
	return id, o, s, nil
}

// restoreOutcome gives l (locked) an outcome read back from the journal or a snapshot, unless its
// window has ended.
func (m *Memory) restoreOutcome(l *list, id string, o *outcome) {
	if !time.Now().Before(o.forget) {
		return
	}
	o.list = l.name
	o.cost = store.OutcomeCost(store.Request{ID: id, Fingerprint: o.fingerprint}, o.lines)
	m.keepOutcome(l, id, o)
}

// encodeOutcomes is the outcomes of l (locked) in a snapshot: their count, then each as its
// opOutcome step without the opcode.
func (l *list) encodeOutcomes(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(l.outcomes)))
	for _, id := range l.outcomeOrder {
		if o := l.outcomes[id]; o != nil {
			b = appendOutcomeFields(b, id, o)
		}
	}
	return b
}

// restoreOutcomes gives l (locked) the outcomes encodeOutcomes wrote at the start of s, and
// returns the rest.
func (m *Memory) restoreOutcomes(l *list, s string) (string, error) {
	count, s, err := readUvarint(s)
	if err != nil {
		return "", err
	}
	if count > uint64(len(s)) {
		return "", fmt.Errorf("%w: %d outcomes in %d bytes", errMalformed, count, len(s))
	}
	for range count {
		var id string
		var o *outcome
		if id, o, s, err = readOutcome(s); err != nil {
			return "", err
		}
		m.restoreOutcome(l, id, o)
	}
	return s, nil
}
