package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
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

// startWaiting runs read, which must wait, in the background, and returns once s counts it among
// its waiting reads.
func startWaiting(t testing.TB, s store.Store, read func(ctx context.Context) ([]string, error)) <-chan readResult {
	t.Helper()
	ctx := t.Context()
	before := s.Waiting()
	done := make(chan readResult, 1)
	go func() {
		lines, err := read(ctx)
		done <- readResult{lines, err}
	}()
	waitFor(t, "the read to wait", func() bool { return s.Waiting() == before+1 })
	return done
}

// startRead starts a read through s that waits up to a minute, far longer than any test.
func startRead(t testing.TB, s store.Store, name string, pos store.Position, n int, keep bool) <-chan readResult {
	t.Helper()
	return startWaiting(t, s, func(ctx context.Context) ([]string, error) {
		return s.Read(ctx, name, pos, n, keep, time.Minute)
	})
}

// startFind starts a Find through s that waits up to a minute; its line is the result's only one.
func startFind(t testing.TB, s store.Store, name string, match store.Matcher) <-chan readResult {
	t.Helper()
	return startWaiting(t, s, func(ctx context.Context) ([]string, error) {
		line, err := s.Find(ctx, name, match, false, time.Minute)
		if err != nil {
			return nil, err
		}
		return []string{line}, nil
	})
}

// result is what the read behind done returned.
func result(t testing.TB, done <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(patience):
		t.Fatal("the read did not return")
		return readResult{}
	}
}

// checkResult fails unless the read behind done returned want.
func checkResult(t testing.TB, what string, done <-chan readResult, want ...string) {
	t.Helper()
	if r := result(t, done); r.err != nil || !slices.Equal(r.lines, want) {
		t.Fatalf("%s got %q, %v; want %q", what, r.lines, r.err, want)
	}
}

func testWaitEndsWithTheErrorOfThen(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	fill(t, s, "l", []string{"a"})
	fill(t, s, "empty", []string{})
	start := time.Now()
	_, err := s.Read(ctx, "l", store.First, 3, false, 50*time.Millisecond)
	checkErr(t, err, &store.ShortListError{Want: 3, Have: 1})
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("returned after %v, before its wait", waited)
	}
	_, err = s.Find(ctx, "l", contains("z"), false, 20*time.Millisecond)
	checkErr(t, err, store.ErrNoMatch)
	_, err = s.Read(ctx, "empty", store.Random, 1, false, 20*time.Millisecond)
	checkErr(t, err, store.ErrEmpty)
	_, err = s.Read(ctx, "nope", store.First, 1, false, 20*time.Millisecond)
	checkErr(t, err, store.ErrNotLoaded)
	checkNotLoaded(t, s, "nope") // waiting for a list does not create it
	if n := s.Waiting(); n != 0 {
		t.Fatalf("%d reads still counted as waiting", n)
	}
	checkLines(t, s, "l", []string{"a"})
}

func testWaitEndsWithTheContext(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "l", []string{})
	cancelled, cancel := context.WithCancel(t.Context())
	done := startWaiting(t, s, func(context.Context) ([]string, error) {
		return s.Read(cancelled, "l", store.First, 1, false, time.Minute)
	})
	cancel()
	if r := result(t, done); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a read whose client left: %q, %v", r.lines, r.err)
	}
	timeout, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Find(timeout, "l", contains(""), false, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a FIND whose context timed out: %v", err)
	}
	must(t, s.Add(t.Context(), "l", "kept", store.Last, false))
	checkLines(t, s, "l", []string{"kept"}) // the reads that left took nothing
	if n := s.Waiting(); n != 0 {
		t.Fatalf("%d reads still counted as waiting", n)
	}
}

func testEndWaits(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	fill(t, s, "empty", []string{})
	unknown := startRead(t, s, "unknown", store.First, 1, false)
	empty := startRead(t, s, "empty", store.First, 1, false)
	s.EndWaits()
	if r := result(t, unknown); !errors.Is(r.err, store.ErrNotLoaded) {
		t.Fatalf("a read of an unknown list when waits end: %q, %v", r.lines, r.err)
	}
	if r := result(t, empty); !errors.Is(r.err, store.ErrEmpty) {
		t.Fatalf("a read of an empty list when waits end: %q, %v", r.lines, r.err)
	}
	// A later read must not wait its minute; patience tells the two apart.
	start := time.Now()
	_, err := s.Read(ctx, "unknown", store.First, 1, false, time.Minute)
	checkErr(t, err, store.ErrNotLoaded)
	_, err = s.Find(ctx, "empty", contains(""), false, time.Minute)
	checkErr(t, err, store.ErrEmpty)
	if elapsed := time.Since(start); elapsed > patience {
		t.Fatalf("reads after EndWaits took %v", elapsed)
	}
	if n := s.Waiting(); n != 0 {
		t.Fatalf("%d reads still counted as waiting", n)
	}
	must(t, s.Add(ctx, "empty", "x", store.Last, false)) // the store still serves
	got, err := s.Read(ctx, "empty", store.First, 1, false, time.Minute)
	if err != nil || !slices.Equal(got, []string{"x"}) {
		t.Fatalf("Read after EndWaits = %q, %v", got, err)
	}
}

func testWaitingCountsWaitingReads(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	if n := s.Waiting(); n != 0 {
		t.Fatalf("a new store counts %d waiting reads", n)
	}
	fill(t, s, "l", []string{})
	read := startRead(t, s, "l", store.First, 1, false)
	find := startFind(t, s, "l", contains("b"))
	if n := s.Waiting(); n != 2 {
		t.Fatalf("Waiting = %d, want 2", n)
	}
	must(t, s.Add(ctx, "l", "a", store.Last, false))
	checkResult(t, "the read", read, "a")
	waitFor(t, "Waiting to count the FIND alone", func() bool { return s.Waiting() == 1 })
	must(t, s.Add(ctx, "l", "b", store.Last, false))
	checkResult(t, "the FIND", find, "b")
	waitFor(t, "Waiting to count none", func() bool { return s.Waiting() == 0 })
}

func testWaitingReadIsWokenByAdd(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	fill(t, b, "l", []string{})
	read := startRead(t, a, "l", store.First, 1, false)
	must(t, b.Add(ctx, "l", "x", store.Last, false))
	checkResult(t, "the waiting read", read, "x")
	read = startRead(t, a, "l", store.Last, 1, true)
	must(t, b.Add(ctx, "l", "y", store.First, true))
	checkResult(t, "the waiting read with KEEP", read, "y")
	checkLines(t, a, "l", []string{"y"})
}

// testWaitingReadsOfEachKind checks READMULTI (waits for enough lines, and does not keep the
// single reads behind it from lines that suit them), KEEP, and FIND (only a match ends it).
func testWaitingReadsOfEachKind(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	fill(t, b, "l", []string{})
	multi := startRead(t, a, "l", store.First, 3, false)
	single := startRead(t, a, "l", store.First, 1, true)
	find := startFind(t, a, "l", contains("needle"))

	must(t, b.Insert(ctx, "l", []string{"a", "b"}, store.Last))
	checkResult(t, "the single read", single, "a") // KEEP: a moved to the end
	checkLines(t, a, "l", []string{"b", "a"})
	must(t, b.Add(ctx, "l", "c", store.Last, false))
	checkResult(t, "the READMULTI", multi, "b", "a", "c")
	must(t, b.Add(ctx, "l", "hay", store.Last, false))
	select {
	case r := <-find:
		t.Fatalf("the FIND returned without a match: %q, %v", r.lines, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	must(t, b.Insert(ctx, "l", []string{"more hay", "a needle", "needle two"}, store.First))
	checkResult(t, "the FIND", find, "a needle")
	checkLines(t, a, "l", []string{"more hay", "needle two", "hay"})
}

func testWaitingReadIsWokenByReplaceAndLoadOnce(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	fill(t, b, "replaced", []string{})
	read := startRead(t, a, "replaced", store.First, 1, false)
	must(t, b.Replace(ctx, "replaced", []string{"x", "y"}, ""))
	checkResult(t, "the read woken by Replace", read, "x")
	checkLines(t, a, "replaced", []string{"y"})

	read = startRead(t, a, "loaded", store.First, 2, false)
	if loaded, _, err := b.LoadOnce(ctx, "loaded", []string{"1", "2", "3"}, "d"); !loaded || err != nil {
		t.Fatalf("LoadOnce = %t, %v", loaded, err)
	}
	checkResult(t, "the read woken by LoadOnce", read, "1", "2")
	checkLines(t, a, "loaded", []string{"3"})
}

// testWaitForAListNotCreatedYet checks that a read waits for a list that does not exist, that
// the wait does not make it a list, and that its creation and first lines end the wait.
func testWaitForAListNotCreatedYet(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	read := startRead(t, a, "later", store.First, 1, false)
	for _, s := range []store.Store{a, b} {
		if got := lists(t, s); len(got) != 0 {
			t.Fatalf("a waiting read created a list: %+v", got)
		}
		checkNotLoaded(t, s, "later")
	}
	must(t, b.Ensure(ctx, "later")) // created, but still empty
	must(t, b.Replace(ctx, "later", []string{"a", "b"}, ""))
	checkResult(t, "the waiting read", read, "a")
	checkLines(t, a, "later", []string{"b"})
}

// testMatchErrorEndsAWaitingFind checks that a match that fails on a new line fails the FIND,
// which then takes nothing.
func testMatchErrorEndsAWaitingFind(t *testing.T, a, b store.Store) {
	errMatch := errors.New("match failed")
	fill(t, b, "l", []string{"old"})
	find := startFind(t, a, "l", func(line string) (bool, error) {
		if strings.HasPrefix(line, "bad") {
			return false, errMatch
		}
		return false, nil
	})
	must(t, b.Add(t.Context(), "l", "bad line", store.Last, false))
	if r := result(t, find); !errors.Is(r.err, errMatch) {
		t.Fatalf("FIND: %q, %v; want the match's error", r.lines, r.err)
	}
	checkLines(t, a, "l", []string{"old", "bad line"})
}

// testWaitingFindDoesNotHoldUpChanges checks that a waiting FIND's test of a new line, however
// long it takes (a catastrophic regular expression runs for its whole time budget), holds up
// neither the changes to the list nor its other reads; that the line is not kept for the FIND
// meanwhile, and that a FIND that accepts a line another read took goes on waiting for the next.
func testWaitingFindDoesNotHoldUpChanges(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	fill(t, b, "l", []string{"x"})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	find := startFind(t, a, "l", func(line string) (bool, error) {
		if line != "slow" {
			return false, nil
		}
		once.Do(func() { close(entered) })
		<-release
		return true, nil
	})
	// In goroutines, so that a store that runs the match within the change fails the test
	// instead of blocking it.
	added, done := make(chan error, 1), make(chan error, 1)
	go func() { added <- b.Add(ctx, "l", "slow", store.Last, false) }()
	select {
	case <-entered:
	case <-time.After(patience):
		t.Fatal("the waiting FIND never tested the new line")
	}
	// While the match runs: the change that brought the line ends, another change, and reads
	// that take the line being tested.
	go func() {
		if err := <-added; err != nil {
			done <- err
			return
		}
		if err := b.Add(ctx, "l", "y", store.Last, false); err != nil {
			done <- err
			return
		}
		got, err := b.Read(ctx, "l", store.First, 2, false, 0)
		if err == nil && !slices.Equal(got, []string{"x", "slow"}) {
			err = errors.New("read " + strings.Join(got, ",") + ", want x,slow")
		}
		done <- err
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(patience):
		close(release)
		t.Fatal("a change waited for a waiting FIND's match")
	}
	close(release)
	select {
	case r := <-find:
		t.Fatalf("the FIND returned though the line it accepted was taken: %q, %v", r.lines, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	must(t, b.Add(ctx, "l", "slow", store.Last, false))
	checkResult(t, "the FIND", find, "slow")
	checkLines(t, a, "l", []string{"y"})
}
