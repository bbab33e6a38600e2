package memory

import (
	"context"
	"sync"
	"time"
)

// requestBook keeps the answers of requests by their client's id (store.Store's Claim and
// Settle), in this process only: a restarted server forgets them, as it forgets nothing else a
// client relies on, since a retry after a restart finds the change it asked for recorded (or
// not) all the same. It holds at most maxRequestBytes of answers, forgetting the oldest first,
// so that clients sending an id with every request cannot grow it without bound.
type requestBook struct {
	mu      sync.Mutex
	entries map[string]*requestEntry
	order   []*requestEntry // by claim, oldest first
	bytes   int64
}

type requestEntry struct {
	id      string
	answer  []byte // nil until settled
	expires time.Time
}

// maxRequestBytes bounds the answers a requestBook keeps.
const maxRequestBytes = 64 << 20

// Claim implements store.Store.
func (m *Memory) Claim(_ context.Context, id string, window time.Duration) ([]byte, bool, error) {
	b := &m.requests
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.forget(now)
	if e := b.entries[id]; e != nil && now.Before(e.expires) {
		return e.answer, false, nil
	}
	if b.entries == nil {
		b.entries = map[string]*requestEntry{}
	}
	e := &requestEntry{id: id, expires: now.Add(window)}
	b.entries[id] = e
	b.order = append(b.order, e)
	b.bytes += int64(len(id))
	return nil, true, nil
}

// Settle implements store.Store.
func (m *Memory) Settle(_ context.Context, id string, answer []byte, window time.Duration) error {
	b := &m.requests
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[id]; e != nil && e.answer == nil {
		e.answer, e.expires = answer, time.Now().Add(window)
		b.bytes += int64(len(answer))
	}
	return nil
}

// forget drops the entries whose window has ended, and the oldest while the book is over its
// bound, in claim order: an entry settled late may outlive a later one by its window.
func (b *requestBook) forget(now time.Time) {
	drop := 0
	for _, e := range b.order {
		if b.bytes <= maxRequestBytes && now.Before(e.expires) {
			break
		}
		if b.entries[e.id] == e {
			delete(b.entries, e.id)
		}
		b.bytes -= int64(len(e.id) + len(e.answer))
		drop++
	}
	b.order = b.order[drop:]
}
