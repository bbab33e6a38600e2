package redis

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Reads that wait. Every script that brings lines to a list publishes the list's name on one
// channel; each server subscribes to it once and wakes its own reads waiting on that name, which
// then try again. Pub/sub loses what is published while a server reconnects, so a waiting read
// also tries again every pollInterval. Unlike the memory store, reads waiting on different
// servers are not served in arrival order: whichever tries first after a change wins.

// A FIND tests the list's lines in its own goroutine: no lock is held, but thirty FINDs with a
// catastrophic regular expression, sent or woken together, would each spend their whole time
// budget at once and leave no processor to the requests of everyone else. So the matches of
// every FIND, waiting or not, go through the waits' gate, which lets no more run at once than
// leave a processor free (as the memory backend's do), and first through their list's gate, one
// at a time: a flood of them on one list queues there, and a FIND of another list waits at the
// waits' gate behind one of them at most (one regex budget), not behind the whole flood.

// pollInterval bounds how long a waiting read goes without trying again.
const pollInterval = time.Second

// waits are this server's waiting reads, by list.
type waits struct {
	mu      sync.Mutex
	byList  map[string]*wake
	waiting atomic.Int64
	ended   chan struct{}
	endOnce sync.Once
	gate    chan struct{} // tokens for the matches of waiting FINDs' tries
	finding map[string]*listGate
}

// listGate is one list's gate for FINDs' matches, shared by the FINDs of the list that run.
type listGate struct {
	ch    chan struct{}
	finds int
}

// wake is closed, and replaced, when lines arrive in a list.
type wake struct {
	ch      chan struct{}
	readers int
}

func (w *waits) init() {
	w.byList, w.finding = map[string]*wake{}, map[string]*listGate{}
	w.ended = make(chan struct{})
	w.gate = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))
}

// gated returns match run through list name's gate, then the waits' gate, and pause, which gives
// both back. A FIND holds them over the lines it tests one after another, gateLines at most, and
// pauses before each round trip to Redis: a FIND of another list then waits behind one budget of a
// flood, where taking the gates a line at a time made it wait one a line, the flood's next FIND
// queued before it at each. test and pause are the FIND's goroutine's alone; waiting for a token
// ends with ctx's error. Call done once the FIND no longer matches.
func (w *waits) gated(ctx context.Context, name string, match store.Matcher) (test store.Matcher, pause, done func()) {
	w.mu.Lock()
	g := w.finding[name]
	if g == nil {
		g = &listGate{ch: make(chan struct{}, 1)}
		w.finding[name] = g
	}
	g.finds++
	w.mu.Unlock()
	acquire := func(gate chan struct{}) error {
		select {
		case gate <- struct{}{}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	held, tested := false, 0
	pause = func() {
		if held {
			<-w.gate
			<-g.ch
			held = false
		}
	}
	done = func() {
		pause()
		w.mu.Lock()
		defer w.mu.Unlock()
		if g.finds--; g.finds == 0 {
			delete(w.finding, name)
		}
	}
	return func(line string) (bool, error) {
		if held && tested >= gateLines {
			pause()
		}
		if !held {
			if err := acquire(g.ch); err != nil {
				return false, err
			}
			if err := acquire(w.gate); err != nil {
				<-g.ch
				return false, err
			}
			held, tested = true, 0
		}
		tested++
		return match(line)
	}, pause, done
}

// gateLines is how many lines a FIND tests in a row before it gives the gates back to the others.
const gateLines = 256

// join returns the channel that the next arrival of lines in the list closes.
func (w *waits) join(name string) *wake {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk := w.byList[name]
	if wk == nil {
		wk = &wake{ch: make(chan struct{})}
		w.byList[name] = wk
	}
	wk.readers++
	return wk
}

func (w *waits) leave(name string, wk *wake) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk.readers--; wk.readers == 0 && w.byList[name] == wk {
		delete(w.byList, name)
	}
}

// arrived wakes the reads waiting on a list.
func (w *waits) arrived(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk := w.byList[name]; wk != nil {
		close(wk.ch)
		delete(w.byList, name)
	}
}

// waitFor runs try until it succeeds with an answer no waiting changes, wait runs out, ctx ends or
// the waits are ended; each try after the first follows a notification or pollInterval.
func (s *Store) waitFor(ctx context.Context, name string, wait time.Duration, try func() ([]string, error)) ([]string, error) {
	if wait <= 0 || s.waitsOver() {
		return try()
	}
	s.waits.waiting.Add(1)
	defer s.waits.waiting.Add(-1)
	deadline := time.Now().Add(wait)
	for {
		// Joined before trying, so that lines arriving during the try wake the next one.
		wk := s.waits.join(name)
		lines, err := try()
		remaining := time.Until(deadline)
		if !store.CanWait(err) || remaining <= 0 {
			s.waits.leave(name, wk)
			return lines, err
		}
		timer := time.NewTimer(min(remaining, pollInterval))
		select {
		case <-wk.ch:
		case <-timer.C:
		case <-ctx.Done():
			err = ctx.Err()
		case <-s.waits.ended:
		}
		timer.Stop()
		s.waits.leave(name, wk)
		if ctx.Err() != nil || s.waitsOver() {
			return nil, err
		}
	}
}

// listen follows the notification channel until the store closes; go-redis resubscribes after a
// reconnection by itself.
func (s *Store) listen(ctx context.Context) {
	defer s.stopped.Done()
	sub := s.client.Subscribe(ctx, s.channel())
	defer sub.Close()
	// Up waits for the subscription, so that a read that waits once the store is up is woken.
	for ctx.Err() == nil {
		if _, err := sub.Receive(ctx); err == nil {
			s.subscribed.Store(true)
			break
		}
		time.Sleep(pollInterval / 10)
	}
	messages := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-messages:
			if !ok {
				return
			}
			s.waits.arrived(m.Payload)
		}
	}
}

// Waiting implements store.Store.
func (s *Store) Waiting() int { return int(s.waits.waiting.Load()) }

// EndWaits implements store.Store.
func (s *Store) EndWaits() { s.waits.endOnce.Do(func() { close(s.waits.ended) }) }

func (s *Store) waitsOver() bool {
	select {
	case <-s.waits.ended:
		return true
	default:
		return false
	}
}
