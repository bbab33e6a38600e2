package memory

import (
	"context"
	"slices"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Reads that wait. A read with a positive wait that the list cannot satisfy yet (not loaded,
// empty, too short, no match) joins the list's queue of waiters. Every change that brings lines
// (Add, Insert, Replace) then offers them to the queue in arrival order, under the list's lock,
// before anyone else can see the new lines: each waiting READ that the list can now satisfy takes
// its lines right there, and its record goes to the journal after the change that woke it. So a
// line never goes to a later read, waiting or not, while an earlier waiting READ that it would
// satisfy still waits; a waiting READMULTI for more lines than have arrived does not hold up the
// single reads behind it.
//
// A waiting FIND is different: its test of a line is a client's regular expression, which may
// take its whole time budget (--regex-timeout) on one line, and thirty of them in a row would
// hold the list's lock, and every writer behind it, for thirty budgets. So a change only hands
// the lines it brought to each waiting FIND (untested, a shared slice per change); the matches
// run afterwards, off the list's lock, in a goroutine of the list's own (evaluate): one waiter
// after the other in arrival order, one list's matches at a time (list.testing) and no more
// lists' at once than the store's gate lets through, so they leave a processor to the writers.
// A line a FIND accepts is taken under the lock if it is still there, and passed over for the
// next one it accepts if another read took it meanwhile: a line is never reserved for a FIND
// being tested, any read may take it first, and it goes to one reader only. Among waiting
// FINDs, a line goes to the first in arrival order that accepts it. A match that fails (the
// regex ran out of time) ends that FIND with the error, as it would end a FIND that does not
// wait.
//
// A read waiting for a list that does not exist waits on a pending list, which becomes the real
// one when the list is created and is dropped when its last waiter leaves.

// waiter is a read in a list's queue.
type waiter struct {
	req    takeRequest
	served chan taken // buffered, so that serving never blocks
	// untested holds, for a FIND, the lines brought since it last looked, which it has yet to
	// test, one slice per change in order (shared by the waiters, never changed). Guarded by the
	// list's mu.
	untested [][]string
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
	if len(req.missed) > 0 { // added at the front while its first look scanned: not tested yet
		w.untested = [][]string{req.missed}
		w.req.missed = nil
		if !l.evaluating {
			l.evaluating = true
			go m.evaluate(l)
		}
	}
	l.waiters = append(l.waiters, w)
	m.waiting.Add(1)
	l.mu.Unlock()
	return m.await(ctx, l, w, wait)
}

// await waits until w is served, its wait ends, ctx ends or EndWaits is called. A read whose wait
// ends unserved answers what the list gives it then: since every change that brought lines
// offered them to the queue, that is the error it would have met without waiting. A FIND first
// tests, off the list's lock, the lines brought that it has not tested yet.
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
	finding := w.req.match != nil && ctx.Err() == nil
	if finding { // no batch of w's is being tested while it holds testing
		l.testing.Lock()
		defer l.testing.Unlock()
	}
	l.mu.Lock()
	if slices.Index(l.waiters, w) < 0 { // served in the meantime: the lines are taken and recorded, so they are its own
		l.mu.Unlock()
		return (<-w.served).result()
	}
	m.leave(l, w)
	untested := w.untested
	w.untested = nil
	t := taken{err: ctx.Err()}
	switch {
	case t.err != nil:
	case finding:
		l.mu.Unlock()
		var done bool
		if t, done = m.claim(ctx, l, w, untested, false); done {
			return t.result()
		}
		l.mu.Lock()
		t.lines, t.commit, t.err = nil, l.settled(), unmatched(l)
	default:
		t.lines, t.commit, t.err = m.takeLocked(l, &w.req)
	}
	abandoned := l.pending && len(l.waiters) == 0
	l.mu.Unlock()
	if abandoned {
		m.dropPending(l)
	}
	return t.result()
}

// unmatched is the error of a FIND that found nothing in l, which must be locked.
func unmatched(l *list) error {
	switch {
	case l.pending:
		return store.ErrNotLoaded
	case l.lines.len() == 0:
		return store.ErrEmpty
	}
	return store.ErrNoMatch
}

// leave takes w, which is in l's queue, out of it; l must be locked.
func (m *Memory) leave(l *list, w *waiter) {
	l.waiters = slices.DeleteFunc(l.waiters, func(x *waiter) bool { return x == w })
	m.waiting.Add(-1)
}

// serveWaiters offers l, which must be locked and just received the lines added, to its queue in
// arrival order. A waiting READ takes its lines at once. A waiting FIND has seen every other
// line without a match, so only a match among the added lines can end its wait: it is handed
// them, to test off the lock (evaluate).
func (m *Memory) serveWaiters(l *list, added []string) {
	var batch []string // one copy for all the FINDs: the caller's slice may become the list's
	for i := 0; i < len(l.waiters) && l.lines.len() > 0; {
		w := l.waiters[i]
		if w.req.match != nil {
			if batch == nil {
				batch = slices.Clone(added)
			}
			w.untested = append(w.untested, batch)
			i++
			continue
		}
		var t taken
		if t.lines, t.commit, t.err = m.takeLocked(l, &w.req); t.err != nil && store.CanWait(t.err) {
			i++
			continue
		}
		m.leave(l, w)
		w.served <- t
	}
	if batch != nil && !l.evaluating {
		l.evaluating = true
		go m.evaluate(l)
	}
}

// evaluate tests the lines brought to l against its waiting FINDs, one waiter after the other
// in arrival order, off l's lock, until none has lines left to test.
func (m *Memory) evaluate(l *list) {
	for {
		l.testing.Lock()
		l.mu.Lock()
		i := slices.IndexFunc(l.waiters, func(w *waiter) bool { return len(w.untested) > 0 })
		if i < 0 {
			l.evaluating = false
			l.mu.Unlock()
			l.testing.Unlock()
			return
		}
		w := l.waiters[i]
		untested := w.untested
		w.untested = nil
		l.mu.Unlock()
		m.claim(context.Background(), l, w, untested, true)
		l.testing.Unlock()
	}
}

// claim tests lines for w, in order, off l's lock, and takes the first it accepts that is still
// in l: done says it took it, or the match failed (w's answer is t). With queued, w is in l's
// queue, and claim serves it and takes it out; w may have left it (its client went away), and
// then claim takes nothing. Without, w has left the queue and claim only answers.
func (m *Memory) claim(ctx context.Context, l *list, w *waiter, untested [][]string, queued bool) (t taken, done bool) {
	for _, batch := range untested {
		for _, line := range batch {
			var ok bool
			err := m.gated(ctx, l, func() (err error) { ok, err = w.req.match(line); return err })
			if err == nil && !ok {
				continue
			}
			l.mu.Lock()
			if queued && slices.Index(l.waiters, w) < 0 {
				l.mu.Unlock()
				return taken{}, false
			}
			t = taken{err: err}
			if err == nil {
				// The waiter's own read (its keep, lease and request), of that line only, under the lock.
				same := w.req
				same.match, same.client = func(s string) (bool, error) { return s == line, nil }, nil
				if t.lines, t.commit, t.err = m.takeLocked(l, &same); t.err != nil && store.CanWait(t.err) {
					l.mu.Unlock() // another read took it first
					continue
				}
			}
			if queued {
				m.leave(l, w)
				w.served <- t
			}
			l.mu.Unlock()
			return t, true
		}
	}
	return taken{}, false
}

// gated runs test, FINDs' matches on l, once l's gate and then the store's let it: no more of
// them run at once than leave a processor free, so that writers and other requests are never
// starved of one by catastrophic regular expressions; and one at a time per list, so that a flood
// of them on one list queues on that list, and a FIND of another list waits at the store's gate
// behind one of them at most (one regex budget), not behind the whole flood. It gives up with
// ctx's error.
func (m *Memory) gated(ctx context.Context, l *list, test func() error) error {
	select {
	case l.finding <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.finding }()
	select {
	case m.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-m.gate }()
	return test()
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
		l = newList(name)
		l.pending = true
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
