package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// long is a lease that no test outlives; short, one that runs out while a test waits for it.
var (
	long  = store.LeaseSpec{TTL: time.Hour}
	short = store.LeaseSpec{TTL: 150 * time.Millisecond}
)

// readLeased is s.ReadLeased of n lines at the front without waiting, failing the test on an
// error.
func readLeased(t testing.TB, s store.Store, name string, n int, spec store.LeaseSpec) store.Lease {
	t.Helper()
	lease, err := s.ReadLeased(t.Context(), name, store.First, n, spec, 0)
	if err != nil {
		t.Fatalf("ReadLeased(%q, %d): %v", name, n, err)
	}
	return lease
}

// byID and byLine are the two kinds of LeaseRef.
func byID(lease store.Lease) store.LeaseRef { return store.LeaseRef{ID: lease.ID} }

func byLine(name, line string) store.LeaseRef { return store.LeaseRef{List: name, Line: line} }

// checkLeased fails unless Lists reports want leased lines in list name of s.
func checkLeased(t testing.TB, s store.Store, name string, want int) {
	t.Helper()
	if got := infoOf(t, s, name).Leased; got != want {
		t.Fatalf("list %q: %d lines leased, want %d", name, got, want)
	}
}

// checkEnded fails unless err says the lease ended the way how says.
func checkEnded(t testing.TB, err error, how string) {
	t.Helper()
	var ended *store.LeaseEndedError
	if !errors.As(err, &ended) || ended.How != how {
		t.Fatalf("error = %v, want a lease %s", err, how)
	}
}

func testReadLeasedHoldsLinesUntilAck(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "logins", []string{"a", "b", "c"})
	before := time.Now()
	lease := readLeased(t, s, "logins", 2, long)
	if lease.ID == "" || lease.List != "logins" || !slices.Equal(lease.Lines, []string{"a", "b"}) {
		t.Fatalf("lease = %+v, want an id, list logins, lines a b", lease)
	}
	if lease.Expires.Before(before.Add(long.TTL-time.Second)) || lease.Expires.After(time.Now().Add(long.TTL+time.Second)) {
		t.Fatalf("lease expires at %v, want about an hour after %v", lease.Expires, before)
	}
	// Leased lines are out of the list: LENGTH and reads see the others only.
	checkLines(t, s, "logins", []string{"c"})
	checkLeased(t, s, "logins", 2)
	if n, err := s.Length(t.Context(), "logins"); err != nil || n != 1 {
		t.Fatalf("Length = %d, %v; want 1", n, err)
	}
	other := readLeased(t, s, "logins", 1, long)
	if other.ID == lease.ID || !slices.Equal(other.Lines, []string{"c"}) {
		t.Fatalf("second lease = %+v, want line c under another id", other)
	}
	_, err := s.ReadLeased(t.Context(), "logins", store.First, 1, long, 0)
	checkErr(t, err, store.ErrEmpty)

	must(t, s.Ack(t.Context(), byID(lease)))
	checkLeased(t, s, "logins", 1)
	checkErr(t, s.Ack(t.Context(), byID(lease)), store.ErrLeaseNotFound)
	must(t, s.Ack(t.Context(), byID(other)))
	checkLeased(t, s, "logins", 0)
	checkLines(t, s, "logins", []string{})
	if info := infoOf(t, s, "logins"); info.Returned != 0 || info.DeadLettered != 0 {
		t.Fatalf("info = %+v, want nothing returned", info)
	}
}

func testReadLeasedFailsAsReadDoes(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	_, err := s.ReadLeased(ctx, "missing", store.First, 1, long, 0)
	checkErr(t, err, store.ErrNotLoaded)
	fill(t, s, "two", []string{"a", "b"})
	_, err = s.ReadLeased(ctx, "two", store.Random, 3, long, 0)
	checkErr(t, err, &store.ShortListError{Want: 3, Have: 2})
	for _, spec := range []store.LeaseSpec{{}, {TTL: -time.Second}, {TTL: time.Second, MaxDeliveries: -1}} {
		_, err = s.ReadLeased(ctx, "two", store.First, 1, spec, 0)
		checkErr(t, err, store.ErrBadLease)
		_, err = s.FindLeased(ctx, "two", contains("a"), spec, 0)
		checkErr(t, err, store.ErrBadLease)
	}
	_, err = s.FindLeased(ctx, "two", contains("z"), long, 0)
	checkErr(t, err, store.ErrNoMatch)
	checkLines(t, s, "two", []string{"a", "b"})
	checkLeased(t, s, "two", 0)
	checkErr(t, s.Ack(ctx, store.LeaseRef{ID: store.NewLeaseID()}), store.ErrLeaseNotFound)
	_, err = s.Extend(ctx, store.LeaseRef{ID: store.NewLeaseID()}, time.Minute)
	checkErr(t, err, store.ErrLeaseNotFound)
	checkErr(t, s.Release(ctx, store.LeaseRef{ID: store.NewLeaseID()}, store.First), store.ErrLeaseNotFound)
}

func testFindLeased(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "users", []string{"ann;fr", "bob;de", "cid;fr"})
	lease, err := s.FindLeased(t.Context(), "users", contains(";fr"), long, 0)
	if err != nil || !slices.Equal(lease.Lines, []string{"ann;fr"}) {
		t.Fatalf("FindLeased = %+v, %v; want ann;fr", lease, err)
	}
	checkLines(t, s, "users", []string{"bob;de", "cid;fr"})
	must(t, s.Release(t.Context(), byID(lease), store.Last))
	checkLines(t, s, "users", []string{"bob;de", "cid;fr", "ann;fr"})
}

func testReleaseGivesLinesBack(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	fill(t, s, "q", []string{"a", "b", "c", "d"})
	first := readLeased(t, s, "q", 2, long)
	must(t, s.Release(ctx, byID(first), store.First))
	checkLines(t, s, "q", []string{"a", "b", "c", "d"})
	// Releasing again is what a retry does: it succeeds and changes nothing.
	must(t, s.Release(ctx, byID(first), store.First))
	checkLines(t, s, "q", []string{"a", "b", "c", "d"})
	checkEnded(t, s.Ack(ctx, byID(first)), store.LeaseReleased)
	_, err := s.Extend(ctx, byID(first), time.Minute)
	checkEnded(t, err, store.LeaseReleased)

	second := readLeased(t, s, "q", 2, long)
	must(t, s.Release(ctx, byID(second), store.Last))
	checkLines(t, s, "q", []string{"c", "d", "a", "b"})
	if info := infoOf(t, s, "q"); info.Leased != 0 || info.Returned != 4 {
		t.Fatalf("info = %+v, want 0 leased, 4 returned", info)
	}
}

func testAckAndReleaseByLine(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	fill(t, s, "q", []string{"a", "b", "c", "d"})
	lease := readLeased(t, s, "q", 3, long)
	must(t, s.Ack(ctx, byLine("q", "b")))
	checkLeased(t, s, "q", 2)
	checkErr(t, s.Ack(ctx, byLine("q", "b")), store.ErrLeaseNotFound)
	// A line that is in the list but held by no lease is not acknowledged: it stays.
	checkErr(t, s.Ack(ctx, byLine("q", "d")), store.ErrLeaseNotFound)
	checkErr(t, s.Ack(ctx, byLine("other", "a")), store.ErrLeaseNotFound)
	must(t, s.Release(ctx, byLine("q", "c"), store.First))
	checkLines(t, s, "q", []string{"c", "d"})
	checkLeased(t, s, "q", 1)
	// The lease still holds a: Extend by line moves the lease that holds it.
	expires, err := s.Extend(ctx, byLine("q", "a"), 2*time.Hour)
	if err != nil || expires.Before(time.Now().Add(2*time.Hour-time.Minute)) {
		t.Fatalf("Extend by line = %v, %v; want two hours from now", expires, err)
	}
	must(t, s.Ack(ctx, byID(lease)))
	checkLeased(t, s, "q", 0)
	checkLines(t, s, "q", []string{"c", "d"})
}

func testExpiryGivesLinesBackOnce(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "q", []string{"a", "b", "c"})
	lease := readLeased(t, s, "q", 2, short)
	waitFor(t, "the lease to expire", func() bool { return infoOf(t, s, "q").Leased == 0 })
	// Back at the front, in their order, once.
	checkLines(t, s, "q", []string{"a", "b", "c"})
	checkEnded(t, s.Ack(t.Context(), byID(lease)), store.LeaseExpired)
	checkLines(t, s, "q", []string{"a", "b", "c"})
	_, err := s.Extend(t.Context(), byID(lease), time.Hour)
	checkEnded(t, err, store.LeaseExpired)
	must(t, s.Release(t.Context(), byID(lease), store.First))
	checkLines(t, s, "q", []string{"a", "b", "c"})
	if info := infoOf(t, s, "q"); info.Returned != 2 {
		t.Fatalf("info = %+v, want 2 lines returned", info)
	}
}

func testExtendKeepsALeaseRunning(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "q", []string{"a"})
	lease := readLeased(t, s, "q", 1, store.LeaseSpec{TTL: 300 * time.Millisecond})
	expires, err := s.Extend(t.Context(), byID(lease), time.Hour)
	if err != nil || expires.Before(time.Now().Add(time.Hour-time.Minute)) {
		t.Fatalf("Extend = %v, %v; want an hour from now", expires, err)
	}
	time.Sleep(time.Second)
	checkLeased(t, s, "q", 1)
	must(t, s.Ack(t.Context(), byID(lease)))
	checkLines(t, s, "q", []string{})
	for _, ttl := range []time.Duration{0, -time.Second} {
		_, err := s.Extend(t.Context(), byID(lease), ttl)
		checkErr(t, err, store.ErrBadLease)
	}
}

func testDeadLetterAfterMaxDeliveries(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	fill(t, s, "q", []string{"poison", "ok"})
	spec := store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 3}
	for range 2 {
		must(t, s.Release(ctx, byID(readLeased(t, s, "q", 1, spec)), store.First))
	}
	checkLines(t, s, "q", []string{"poison", "ok"})
	checkLines(t, s, store.DeadLetterList("q"), []string{}) // made with the first lease that may need it
	// The third return, by expiry this time, sends it to the dead letters.
	readLeased(t, s, "q", 1, store.LeaseSpec{TTL: short.TTL, MaxDeliveries: 3})
	waitFor(t, "the lease to expire", func() bool { return infoOf(t, s, "q").Leased == 0 })
	checkLines(t, s, "q", []string{"ok"})
	checkLines(t, s, store.DeadLetterList("q"), []string{"poison"})
	if info := infoOf(t, s, "q"); info.Returned != 2 || info.DeadLettered != 1 {
		t.Fatalf("info = %+v, want 2 returned, 1 dead-lettered", info)
	}
	// An acknowledged line starts its count again when it is added back.
	lease := readLeased(t, s, "q", 1, spec)
	must(t, s.Release(ctx, byID(lease), store.First))
	must(t, s.Ack(ctx, byID(readLeased(t, s, "q", 1, spec))))
	must(t, s.Add(ctx, "q", "ok", store.Last, false))
	for range 2 {
		must(t, s.Release(ctx, byID(readLeased(t, s, "q", 1, spec)), store.First))
	}
	checkLines(t, s, "q", []string{"ok"})

	// The dead letters' own leases never dead-letter: poison goes back to q.dead, not further.
	dead := store.DeadLetterList("q")
	for range 4 {
		must(t, s.Release(ctx, byID(readLeased(t, s, dead, 1, store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 1})), store.First))
	}
	checkLines(t, s, dead, []string{"poison"})
	checkNotLoaded(t, s, store.DeadLetterList(dead))
}

// testDeadLetterListsCountAgainstMaxLists: the dead-letter list a lease may need is made, within
// the limit, with the first such lease; one that could need a list there is no room for is
// refused before it takes a line.
func testDeadLetterListsCountAgainstMaxLists(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{MaxLists: 2})
	ctx := t.Context()
	fill(t, s, "q", []string{"a", "b"})
	fill(t, s, "r", []string{"c"})
	spec := store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 1}
	_, err := s.ReadLeased(ctx, "q", store.First, 1, spec, 0)
	checkLimit(t, err, store.LimitLists, 2)
	_, err = s.FindLeased(ctx, "q", func(string) (bool, error) { return true, nil }, spec, 0)
	checkLimit(t, err, store.LimitLists, 2)
	checkLines(t, s, "q", []string{"a", "b"})
	checkNotLoaded(t, s, store.DeadLetterList("q"))
	lease := readLeased(t, s, "q", 1, store.LeaseSpec{TTL: time.Hour}) // no dead letters: no list
	must(t, s.Release(ctx, byID(lease), store.First))
	checkLines(t, s, "q", []string{"a", "b"})
}

func testLeasedLinesStayUnique(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	must(t, s.Add(ctx, "u", "a", store.Last, true))
	lease := readLeased(t, s, "u", 1, long)
	// The line may come back: it is still the list's, and a unique add refuses it.
	checkErr(t, s.Add(ctx, "u", "a", store.Last, true), store.ErrDuplicate)
	must(t, s.Ack(ctx, byID(lease)))
	must(t, s.Add(ctx, "u", "a", store.Last, true))
	checkLines(t, s, "u", []string{"a"})
}

func testLeasesOutliveReset(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "q", []string{"a", "b"})
	lease := readLeased(t, s, "q", 1, long)
	if _, err := s.Reset(t.Context(), "q"); err != nil {
		t.Fatal(err)
	}
	// The client holding the lease may still give its line back.
	checkLeased(t, s, "q", 1)
	must(t, s.Release(t.Context(), byID(lease), store.First))
	checkLines(t, s, "q", []string{"a"})
}

func testReloadEndsTheLeases(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	must(t, s.Add(ctx, "q", "a", store.Last, true))
	must(t, s.Add(ctx, "q", "b", store.Last, true))
	must(t, s.Add(ctx, "q", "c", store.Last, true))
	held := readLeased(t, s, "q", 1, long)
	brief := readLeased(t, s, "q", 1, short)
	n, err := s.Reload(ctx, "q", []string{"b", "c", "d"}, "d1")
	if err != nil || n != 2 {
		t.Fatalf("Reload = %d, %v; want 2", n, err)
	}
	checkLeased(t, s, "q", 0)
	checkErr(t, s.Ack(ctx, byID(held)), store.ErrLeaseNotFound)
	checkErr(t, s.Release(ctx, byID(brief), store.First), store.ErrLeaseNotFound)
	time.Sleep(3 * short.TTL) // the brief lease would have expired: its line must not come back
	checkLines(t, s, "q", []string{"b", "c", "d"})
	if got := infoOf(t, s, "q"); got.Digest != "d1" {
		t.Fatalf("after Reload the digest is %q", got.Digest)
	}
	must(t, s.Add(ctx, "q", "a", store.Last, true)) // no longer the list's: UNIQUE takes it
	checkErr(t, s.Add(ctx, "q", "d", store.Last, true), store.ErrDuplicate)
	if n, err := s.Reload(ctx, "q", nil, ""); err != nil || n != 0 {
		t.Fatalf("Reload of a list without leases = %d, %v", n, err)
	}
	checkLines(t, s, "q", []string{})
	if n, err := s.Reload(ctx, "new", []string{"x"}, ""); err != nil || n != 0 {
		t.Fatalf("Reload of no list = %d, %v", n, err)
	}
	checkLines(t, s, "new", []string{"x"})
}

func testLeaseLimitsCountLeasedLines(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{MaxLinesPerList: 2})
	ctx := t.Context()
	fill(t, s, "q", []string{"a", "b"})
	lease := readLeased(t, s, "q", 1, long)
	// The leased line may come back at any time, so it keeps its place.
	checkLimit(t, s.Add(ctx, "q", "c", store.Last, false), store.LimitLinesPerList, 2)
	must(t, s.Release(ctx, byID(lease), store.First))
	checkLines(t, s, "q", []string{"a", "b"})
}

// testLeasesAreSharedByEveryStore takes a lease through a and ends it through b by its id alone,
// and checks that an expiry wakes a read waiting on the other store.
func testLeasesAreSharedByEveryStore(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	fill(t, a, "q", []string{"a", "b"})
	lease := readLeased(t, a, "q", 1, long)
	must(t, b.Ack(ctx, byID(lease)))
	checkErr(t, a.Ack(ctx, byID(lease)), store.ErrLeaseNotFound)

	readLeased(t, a, "q", 1, short)
	done := startRead(t, b, "q", store.First, 1, false)
	checkResult(t, "a read woken by an expiry", done, "b")
	checkLines(t, a, "q", []string{})
	if info := infoOf(t, b, "q"); info.Leased != 0 || info.Returned != 1 {
		t.Fatalf("info = %+v, want 0 leased, 1 returned", info)
	}
}

// testLeasedConsumersLoseNothing: clients read with leases through both stores and, at random,
// acknowledge, release, or drop what they hold as a crashed client would. At the end every line
// was acknowledged exactly once or is back in the list.
func testLeasedConsumersLoseNothing(t *testing.T, a, b store.Store) {
	const clients, lines = 16, 400
	want := numbered(lines)
	fill(t, a, "q", want)
	spec := store.LeaseSpec{TTL: 200 * time.Millisecond}
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for c := range clients {
		s := []store.Store{a, b}[c%2]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for range lines / clients * 2 {
				lease, err := s.ReadLeased(context.Background(), "q", store.First, 1+rng.IntN(2), spec, 0)
				if err != nil {
					continue // empty, or too short: the others hold the lines
				}
				switch rng.IntN(4) {
				case 0, 1:
					if err := s.Ack(context.Background(), byID(lease)); err != nil {
						if errors.As(err, new(*store.LeaseEndedError)) {
							continue // ran out before the ack: the lines are back
						}
						t.Errorf("Ack: %v", err)
						return
					}
					mu.Lock()
					acked = append(acked, lease.Lines...)
					mu.Unlock()
				case 2:
					if err := s.Release(context.Background(), byID(lease), store.First); err != nil {
						t.Errorf("Release: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, "the dropped leases to expire", func() bool { return infoOf(t, a, "q").Leased == 0 })
	rest, err := b.Lines(t.Context(), "q")
	must(t, err)
	got := append(slices.Clone(acked), rest...)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("acknowledged (%d) and left (%d) = %d lines, want each of %d once", len(acked), len(rest), len(got), lines)
	}
}
