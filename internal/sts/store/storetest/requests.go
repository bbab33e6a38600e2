package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Requests (store/request.go): a change made under a store.Request is made once, whichever store
// sharing the backend its retries reach, and every retry gets its outcome.

// under returns a context carrying the request id with a fingerprint of its own, for a minute.
func under(t testing.TB, id string) context.Context {
	return store.WithRequest(t.Context(), store.Request{ID: id, Fingerprint: []byte("fp " + id), Window: time.Minute})
}

func testRequestsAreBoundToOneFingerprint(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	r := store.Request{ID: "r1", Fingerprint: []byte("READ l"), Window: time.Minute}
	must(t, a.BindRequest(ctx, r))
	must(t, b.BindRequest(ctx, r)) // its retry
	other := r
	other.Fingerprint = []byte("READ m")
	checkErr(t, b.BindRequest(ctx, other), store.ErrRequestReused)

	// A change recorded under the id refuses another fingerprint too, on its list.
	fill(t, a, "l", months)
	_, err := a.Read(store.WithRequest(ctx, r), "l", store.First, 1, false, 0)
	must(t, err)
	_, err = b.Read(store.WithRequest(ctx, other), "l", store.First, 1, false, 0)
	checkErr(t, err, store.ErrRequestReused)
	checkLines(t, a, "l", months[1:])
}

// testRetriedChangesAreMadeOnce sends each change under a request through a, then again through
// b: the retry changes nothing more and gets the first outcome, though the list moved meanwhile.
func testRetriedChangesAreMadeOnce(t *testing.T, a, b store.Store) {
	fill(t, a, "l", months)
	ctx := under(t, "read")
	first, err := a.Read(ctx, "l", store.Random, 2, false, 0)
	must(t, err)
	retry, err := b.Read(ctx, "l", store.Random, 2, false, 0)
	if err != nil || !slices.Equal(retry, first) {
		t.Fatalf("retried Read = %q, %v; want %q", retry, err, first)
	}
	if n, _ := a.Length(t.Context(), "l"); n != 4 {
		t.Fatalf("%d lines left after a Read of 2 and its retry, want 4", n)
	}

	ctx = under(t, "find")
	found, err := a.Find(ctx, "l", func(string) (bool, error) { return true, nil }, false, 0)
	must(t, err)
	again, err := b.Find(ctx, "l", func(line string) (bool, error) { return line == "nothing", nil }, false, 0)
	if err != nil || again != found {
		t.Fatalf("retried Find = %q, %v; want %q", again, err, found)
	}

	ctx = under(t, "add")
	must(t, a.Add(ctx, "l", "added", store.Last, false))
	must(t, b.Add(ctx, "l", "added", store.Last, false))
	must(t, b.Add(ctx, "l", "added", store.Last, true)) // even one that would be a duplicate now
	checkCount(t, a, "l", "added", 1)

	ctx = under(t, "insert")
	must(t, a.Insert(ctx, "l", []string{"i1", "i2"}, store.First))
	must(t, b.Insert(ctx, "l", []string{"i1", "i2"}, store.First))
	checkCount(t, a, "l", "i1", 1)

	ctx = under(t, "replace")
	must(t, a.Replace(ctx, "r", []string{"x", "y"}, "d"))
	_, err = a.Read(t.Context(), "r", store.First, 1, false, 0)
	must(t, err)
	must(t, b.Replace(ctx, "r", []string{"x", "y"}, "d"))
	checkLines(t, a, "r", []string{"y"}) // the x read since the replacement stays read

	ctx = under(t, "reset")
	if existed, err := a.Reset(ctx, "r"); !existed || err != nil {
		t.Fatalf("Reset = %t, %v", existed, err)
	}
	must(t, a.Add(t.Context(), "r", "after", store.Last, false))
	if existed, err := b.Reset(ctx, "r"); !existed || err != nil {
		t.Fatalf("retried Reset = %t, %v; want the first answer", existed, err)
	}
	checkLines(t, a, "r", []string{"after"})

	ctx = under(t, "reload")
	held := readLeased(t, a, "r", 1, long)
	if n, err := a.Reload(ctx, "r", []string{"s1", "s2"}, "d2"); n != 1 || err != nil {
		t.Fatalf("Reload = %d, %v; want 1", n, err)
	}
	_, err = a.Read(t.Context(), "r", store.First, 1, false, 0)
	must(t, err)
	if n, err := b.Reload(ctx, "r", []string{"s1", "s2"}, "d2"); n != 1 || err != nil {
		t.Fatalf("retried Reload = %d, %v; want the first answer", n, err)
	}
	checkLines(t, a, "r", []string{"s2"})
	checkErr(t, b.Ack(t.Context(), byID(held)), store.ErrLeaseNotFound)
}

// testRetriedLeaseChangesAreMadeOnce: a leased read's retry gets the same lease; an Ack, Release or
// Extend retried once the lease ended (by that very change) gets the first answer, not "no such
// lease".
func testRetriedLeaseChangesAreMadeOnce(t *testing.T, a, b store.Store) {
	fill(t, a, "q", months)
	ctx := under(t, "leased")
	first, err := a.ReadLeased(ctx, "q", store.First, 2, long, 0)
	must(t, err)
	retry, err := b.ReadLeased(ctx, "q", store.First, 2, long, 0)
	if err != nil || retry.ID != first.ID || !slices.Equal(retry.Lines, first.Lines) || !retry.Expires.Equal(first.Expires) {
		t.Fatalf("retried ReadLeased = %+v, %v; want %+v", retry, err, first)
	}
	checkLeased(t, a, "q", 2)

	ctx = under(t, "found")
	found, err := a.FindLeased(ctx, "q", func(line string) (bool, error) { return line == "Apr", nil }, long, 0)
	must(t, err)
	again, err := b.FindLeased(ctx, "q", func(line string) (bool, error) { return line == "Apr", nil }, long, 0)
	if err != nil || again.ID != found.ID || !slices.Equal(again.Lines, []string{"Apr"}) {
		t.Fatalf("retried FindLeased = %+v, %v; want %+v", again, err, found)
	}

	ctx = under(t, "extend")
	until, err := a.Extend(ctx, byID(first), 2*time.Hour)
	must(t, err)
	if again, err := b.Extend(ctx, byID(first), 2*time.Hour); err != nil || !again.Equal(until) {
		t.Fatalf("retried Extend = %v, %v; want %v", again, err, until)
	}

	ctx = under(t, "ack")
	must(t, a.Ack(ctx, byID(first)))
	must(t, b.Ack(ctx, store.LeaseRef{ID: first.ID})) // by its id alone, the lease gone
	checkErr(t, b.Ack(t.Context(), byID(first)), store.ErrLeaseNotFound)

	ctx = under(t, "release")
	must(t, a.Release(ctx, byLine("q", "Apr"), store.First))
	_, err = a.Read(t.Context(), "q", store.First, 1, false, 0) // takes the Apr released
	must(t, err)
	must(t, b.Release(ctx, byLine("q", "Apr"), store.First))
	checkLines(t, a, "q", []string{"Mar", "May", "June"})
	checkLeased(t, a, "q", 0)
}

// testConcurrentRetriesTakeOneLine sends one read under one request through both stores from
// many goroutines at once, as a client whose retries overtake each other would: one line goes,
// and every answer is that line.
func testConcurrentRetriesTakeOneLine(t *testing.T, a, b store.Store) {
	fill(t, a, "l", numbered(100))
	for round := range 20 {
		ctx := under(t, fmt.Sprintf("concurrent %d", round))
		var wg sync.WaitGroup
		got := make([][]string, 8)
		for i := range got {
			s := []store.Store{a, b}[i%2]
			wg.Go(func() {
				var err error
				if got[i], err = s.Read(ctx, "l", store.First, 1, false, 0); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, lines := range got[1:] {
			if !slices.Equal(lines, got[0]) {
				t.Fatalf("round %d: the retries got %q", round, got)
			}
		}
	}
	if n, _ := a.Length(t.Context(), "l"); n != 80 {
		t.Fatalf("%d lines left after 20 reads of one line, each sent 8 times, want 80", n)
	}
}

// testFailedChangesRecordNothing: a change that fails changes nothing, and its retry runs again
// against the list as it is then.
func testFailedChangesRecordNothing(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := under(t, "empty")
	fill(t, s, "l", []string{})
	_, err := s.Read(ctx, "l", store.First, 1, false, 0)
	checkErr(t, err, store.ErrEmpty)
	must(t, s.Add(t.Context(), "l", "a", store.Last, true))
	if got, err := s.Read(ctx, "l", store.First, 1, false, 0); err != nil || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("the retry of a Read that met an empty list = %q, %v; want a", got, err)
	}

	ctx = under(t, "duplicate")
	must(t, s.Add(t.Context(), "l", "b", store.Last, true))
	checkErr(t, s.Add(ctx, "l", "b", store.Last, true), store.ErrDuplicate)
	_, err = s.Read(t.Context(), "l", store.First, 1, false, 0)
	must(t, err)
	must(t, s.Add(ctx, "l", "b", store.Last, true))
	checkLines(t, s, "l", []string{"b"})
}

// testRequestOutcomesEndWithTheirWindow: once its window has ended, a request's outcome is
// forgotten and the same change is made again.
func testRequestOutcomesEndWithTheirWindow(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	ctx := store.WithRequest(t.Context(), store.Request{ID: "brief", Fingerprint: []byte("fp"), Window: 200 * time.Millisecond})
	_, err := s.Read(ctx, "l", store.First, 1, false, 0)
	must(t, err)
	waitFor(t, "the request's window to end", func() bool {
		got, err := s.Read(ctx, "l", store.First, 1, false, 0)
		return err == nil && !slices.Equal(got, months[:1])
	})
}

// checkCount checks that list name holds line count times.
func checkCount(t testing.TB, s store.Store, name, line string, count int) {
	t.Helper()
	lines, err := s.Lines(t.Context(), name)
	must(t, err)
	if n := len(slices.DeleteFunc(lines, func(l string) bool { return l != line })); n != count {
		t.Fatalf("%s holds %q %d times, want %d", name, line, n, count)
	}
}
