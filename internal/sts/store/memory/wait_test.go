package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// waitFor polls cond until it holds, failing the test after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type readResult struct {
	lines []string
	err   error
}

// startRead runs a waiting read in the background and waits until it is queued.
func startRead(t *testing.T, m *Memory, name string, pos store.Position, n int, keep bool) <-chan readResult {
	t.Helper()
	before := m.Waiting()
	done := make(chan readResult, 1)
	go func() {
		lines, err := m.Read(ctx, name, pos, n, keep, time.Minute)
		done <- readResult{lines, err}
	}()
	waitFor(t, "the read to wait", func() bool { return m.Waiting() == before+1 })
	return done
}

func result(t *testing.T, done <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not return")
		return readResult{}
	}
}

// TestWaitingReadsAreServedInArrivalOrder queues reads on an empty list, then adds lines one at
// a time: the i-th read gets the i-th line.
func TestWaitingReadsAreServedInArrivalOrder(t *testing.T) {
	m := storeWith([]string{})
	const readers = 20
	var waiting []<-chan readResult
	for range readers {
		waiting = append(waiting, startRead(t, m, "l", store.First, 1, false))
	}
	for i := range readers {
		if err := m.Add(ctx, "l", fmt.Sprint(i), store.Last, false); err != nil {
			t.Fatal(err)
		}
		if r := result(t, waiting[i]); r.err != nil || !slices.Equal(r.lines, []string{fmt.Sprint(i)}) {
			t.Fatalf("read %d got %q, %v; want line %d", i, r.lines, r.err, i)
		}
	}
	if m.Waiting() != 0 {
		t.Fatalf("%d reads still waiting", m.Waiting())
	}
	checkLines(t, m, "l", []string{})
}

// TestAWaitingReadBeatsALaterOne checks that a line that arrives goes to the read that waits,
// not to one that comes after the line: the add serves the queue before it returns.
func TestAWaitingReadBeatsALaterOne(t *testing.T) {
	m := storeWith([]string{})
	first := startRead(t, m, "l", store.First, 1, false)
	if err := m.Add(ctx, "l", "x", store.Last, false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Read(ctx, "l", store.First, 1, false, 0); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("a later read: %v, want ErrEmpty", err)
	}
	if r := result(t, first); !slices.Equal(r.lines, []string{"x"}) {
		t.Fatalf("the waiting read got %q, %v", r.lines, r.err)
	}
}

func TestWaitEndsWithTheErrorOfThen(t *testing.T) {
	m := storeWith([]string{"a"})
	start := time.Now()
	_, err := m.Read(ctx, "l", store.First, 3, false, 50*time.Millisecond)
	var short *store.ShortListError
	if !errors.As(err, &short) || short.Want != 3 || short.Have != 1 {
		t.Fatalf("a READMULTI that waited in vain: %v", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("returned after %v, before its wait", waited)
	}
	if _, err := m.Find(ctx, "l", contains("z"), false, 20*time.Millisecond); !errors.Is(err, store.ErrNoMatch) {
		t.Fatalf("a FIND that waited in vain: %v", err)
	}
	if _, err := m.Read(ctx, "nope", store.First, 1, false, 20*time.Millisecond); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("a read of a list never created: %v", err)
	}
	if len(m.pending) != 0 {
		t.Fatalf("the pending list is left behind: %v", m.pending)
	}
	if m.Waiting() != 0 {
		t.Fatalf("%d reads still counted as waiting", m.Waiting())
	}
	checkLines(t, m, "l", []string{"a"})
}

// TestWaitForAListNotCreatedYet checks that a read waits for a list that does not exist, that
// the wait does not make it a key, and that its creation and first line end the wait.
func TestWaitForAListNotCreatedYet(t *testing.T) {
	m := New()
	done := startRead(t, m, "later", store.First, 1, false)
	if got := lengths(m); len(got) != 0 {
		t.Fatalf("a waiting read created a list: %v", got)
	}
	if _, err := m.Length(ctx, "later"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Length of the awaited list: %v", err)
	}
	if err := m.Ensure(ctx, "later"); err != nil { // created, but still empty
		t.Fatal(err)
	}
	if err := m.Replace(ctx, "later", []string{"a", "b"}, ""); err != nil {
		t.Fatal(err)
	}
	if r := result(t, done); !slices.Equal(r.lines, []string{"a"}) {
		t.Fatalf("got %q, %v", r.lines, r.err)
	}
	checkLines(t, m, "later", []string{"b"})
	if len(m.pending) != 0 {
		t.Fatalf("pending lists left: %v", m.pending)
	}
}

// TestWaitingReadsOfEachKind checks READMULTI (waits for enough lines, and lets single reads
// behind it go first), FIND (only a match ends it) and KEEP.
func TestWaitingReadsOfEachKind(t *testing.T) {
	m := storeWith([]string{})
	multi := startRead(t, m, "l", store.First, 3, false)
	single := startRead(t, m, "l", store.First, 1, true)
	findDone := make(chan readResult, 1)
	go func() {
		line, err := m.Find(ctx, "l", contains("needle"), false, time.Minute)
		findDone <- readResult{[]string{line}, err}
	}()
	waitFor(t, "the FIND to wait", func() bool { return m.Waiting() == 3 })

	if err := m.Insert(ctx, "l", []string{"a", "b"}, store.Last); err != nil {
		t.Fatal(err)
	}
	if r := result(t, single); !slices.Equal(r.lines, []string{"a"}) { // KEEP: a moved to the end
		t.Fatalf("the single read got %q, %v", r.lines, r.err)
	}
	checkLines(t, m, "l", []string{"b", "a"})
	if err := m.Add(ctx, "l", "c", store.Last, false); err != nil {
		t.Fatal(err)
	}
	if r := result(t, multi); !slices.Equal(r.lines, []string{"b", "a", "c"}) {
		t.Fatalf("the READMULTI got %q, %v", r.lines, r.err)
	}
	if err := m.Add(ctx, "l", "hay", store.Last, false); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-findDone:
		t.Fatalf("the FIND returned without a match: %v", r)
	case <-time.After(20 * time.Millisecond):
	}
	if err := m.Insert(ctx, "l", []string{"more hay", "a needle", "needle two"}, store.First); err != nil {
		t.Fatal(err)
	}
	if r := result(t, findDone); !slices.Equal(r.lines, []string{"a needle"}) {
		t.Fatalf("the FIND got %q, %v", r.lines, r.err)
	}
	checkLines(t, m, "l", []string{"more hay", "needle two", "hay"})
}

func TestWaitEndsWithTheContextAndEndWaits(t *testing.T) {
	m := storeWith([]string{})
	cancelled, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.Read(cancelled, "l", store.First, 1, false, time.Minute)
		done <- err
	}()
	waitFor(t, "the read to wait", func() bool { return m.Waiting() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a read whose client left: %v", err)
	}
	if err := m.Add(ctx, "l", "kept", store.Last, false); err != nil {
		t.Fatal(err)
	}
	checkLines(t, m, "l", []string{"kept"}) // the cancelled read took nothing

	empty := startRead(t, m, "empty", store.First, 1, false)
	m.EndWaits()
	if r := result(t, empty); !errors.Is(r.err, store.ErrNotLoaded) {
		t.Fatalf("a read when waits end: %v", r.err)
	}
	start := time.Now()
	if _, err := m.Read(ctx, "empty", store.First, 1, false, time.Minute); !errors.Is(err, store.ErrNotLoaded) || time.Since(start) > time.Second {
		t.Fatalf("a read after EndWaits: %v after %v", err, time.Since(start))
	}
}

// TestMatchErrorEndsAWaitingFind checks that a match that fails on a new line fails the FIND.
func TestMatchErrorEndsAWaitingFind(t *testing.T) {
	m := storeWith([]string{"old"})
	done := make(chan error, 1)
	go func() {
		_, err := m.Find(ctx, "l", func(line string) (bool, error) {
			if strings.HasPrefix(line, "bad") {
				return false, errMatch
			}
			return false, nil
		}, false, time.Minute)
		done <- err
	}()
	waitFor(t, "the FIND to wait", func() bool { return m.Waiting() == 1 })
	if err := m.Add(ctx, "l", "bad line", store.Last, false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, errMatch) {
		t.Fatalf("FIND: %v, want the match's error", err)
	}
	checkLines(t, m, "l", []string{"old", "bad line"})
}
