package memory

import (
	"context"
	"slices"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Reads that wait. A read with a positive wait that the list cannot satisfy yet (not loaded,
// empty, too short, no match) joins the list's queue of waiters. Every change that brings lines
// (Add, Insert, Replace) then offers the list to the queue in arrival order, under the list's
// lock, before anyone else can see the new lines: each waiting read that the list can now satisfy
// takes its lines right there, and its record goes to the journal after the change that woke it.
// So a line never goes to a later read, waiting or not, while an earlier waiting read that it
// would satisfy still waits; a waiting READMULTI for more lines than have arrived does not hold
// up the single reads behind it. A read waiting for a list that does not exist waits on a
// pending list, which becomes the real one when the list is created and is dropped when its
// last waiter leaves.

// waiter is a read in a list's queue.
type waiter struct {
	req    takeRequest
	served chan taken // buffered, so that serving never blocks
}

// taken is what a waiting read was served.
type taken struct {
	lines  []string
	commit Commit
	err    error
}

func (t taken) result() ([]string, error) {
	if err := durable(t.commit); err != nil {
		return nil, err
	}
	if t.err != nil {
		return nil, t.err
	}
	return t.lines, nil
}

// take runs a read, waiting up to wait for the list to be able to satisfy it.
func (m *Memory) take(ctx context.Context, name string, req takeRequest, wait time.Duration) ([]string, error) {
	waiting := wait > 0 && !m.waitsOver()
	l := m.lookup(name)
	switch {
	case l != nil:
		l.mu.Lock()
	case waiting:
		l = m.lockPending(name)
	default:
		return nil, store.ErrNotLoaded
	}
	lines, c, err := m.takeLocked(l, &req)
	if err == nil || !waiting || !store.CanWait(err) {
		l.mu.Unlock()
		return taken{lines, c, err}.result()
	}
	w := &waiter{req: req, served: make(chan taken, 1)}
	l.waiters = append(l.waiters, w)
	m.waiting.Add(1)
	l.mu.Unlock()
	return m.await(ctx, l, w, wait)
}

// await waits until w is served, its wait ends, ctx ends or EndWaits is called. A read whose wait
// ends unserved answers what the list gives it then: since every change that brought lines
// offered them to the queue, that is the error it would have met without waiting.
func (m *Memory) await(ctx context.Context, l *list, w *waiter, wait time.Duration) ([]string, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case t := <-w.served:
		return t.result()
	case <-timer.C:
	case <-ctx.Done():
	case <-m.waitsEnded:
	}
	l.mu.Lock()
	i := slices.Index(l.waiters, w)
	if i < 0 { // served in the meantime: the lines are taken and recorded, so they are its own
		l.mu.Unlock()
		return (<-w.served).result()
	}
	l.waiters = slices.Delete(l.waiters, i, i+1)
	m.waiting.Add(-1)
	t := taken{err: ctx.Err()}
	if t.err == nil {
		t.lines, t.commit, t.err = m.takeLocked(l, &w.req)
	}
	abandoned := l.pending && len(l.waiters) == 0
	l.mu.Unlock()
	if abandoned {
		m.dropPending(l)
	}
	return t.result()
}

// serveWaiters offers l, which must be locked and just received the lines added, to its queue in
// arrival order. A waiting FIND has seen every other line without a match, so only a match among
// the added lines can end its wait: the others are not scanned again for it.
func (m *Memory) serveWaiters(l *list, added []string) {
	for i := 0; i < len(l.waiters) && l.lines.len() > 0; {
		w := l.waiters[i]
		var t taken
		if w.req.match != nil {
			found, err := matchesAny(w.req.match, added)
			if err == nil && !found {
				i++
				continue
			}
			t.err = err
		}
		if t.err == nil {
			if t.lines, t.commit, t.err = m.takeLocked(l, &w.req); t.err != nil && store.CanWait(t.err) {
				i++
				continue
			}
		}
		l.waiters = slices.Delete(l.waiters, i, i+1)
		m.waiting.Add(-1)
		w.served <- t
	}
}

func matchesAny(match func(string) (bool, error), lines []string) (bool, error) {
	for _, line := range lines {
		if ok, err := match(line); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// lockPending returns the list called name, locked: the list itself if it exists by now, or
// else the pending list that waiting reads share until someone creates it.
func (m *Memory) lockPending(name string) *list {
	m.mu.Lock()
	if l := m.lists[name]; l != nil {
		m.mu.Unlock() // a list may be locked for long (a FIND scan): not under the map's lock
		l.mu.Lock()
		return l
	}
	defer m.mu.Unlock()
	l := m.pending[name]
	if l == nil {
		l = &list{name: name, pending: true}
		m.pending[name] = l
	}
	l.mu.Lock() // a pending list is only ever locked briefly
	return l
}

// dropPending forgets the pending list l once its last waiter has left, unless it has become a
// real list meanwhile.
func (m *Memory) dropPending(l *list) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[l.name] != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) == 0 {
		delete(m.pending, l.name)
	}
}

// Waiting implements store.Store.
func (m *Memory) Waiting() int { return int(m.waiting.Load()) }

// EndWaits implements store.Store.
func (m *Memory) EndWaits() { m.endWaits.Do(func() { close(m.waitsEnded) }) }

func (m *Memory) waitsOver() bool {
	select {
	case <-m.waitsEnded:
		return true
	default:
		return false
	}
}
