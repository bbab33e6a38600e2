package redis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// leasedOf is what s's Lists reports of list name.
func leasedOf(t *testing.T, s *Store, name string) store.ListInfo {
	t.Helper()
	infos, err := s.Lists(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Name == name {
			return info
		}
	}
	t.Fatalf("Lists has no %q", name)
	return store.ListInfo{}
}

// A server that dies between a lease's script and its report to the expiry loop's schedule
// leaves the lease out of it: another server's sweep (the first, as it starts) finds it, and its
// lines come back.
func TestLeaseLeftOutOfTheScheduleComesBack(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	a := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	if err := a.Replace(ctx, "q", []string{"a", "b"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: 200 * time.Millisecond}, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("DEL", prefix+"leases-due"); err != nil {
		t.Fatal(err)
	}

	b := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "the lease to expire", func() bool {
		return leasedOf(t, b, "q").Leased == 0
	})
	if got, err := b.Lines(ctx, "q"); err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Lines = %q, %v; want a b", got, err)
	}
}

// stageDeadLetter opens a store on a Redis of its own whose list q holds poison then lines,
// leases poison, for one delivery at most, and releases it while a fresh claim on q's dead
// letters is held: the line waits on its way to them. unclaim makes the claim stale, waits for the
// line to move, and checks that it reached the dead letters.
func stageDeadLetter(t *testing.T, lines ...string) (s *Store, srv *redistest.Server, prefix string, unclaim func()) {
	t.Helper()
	srv, prefix = redistest.Start(t), newPrefix()
	s = open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	if err := s.Replace(ctx, "q", append([]string{"poison"}, lines...), ""); err != nil {
		t.Fatal(err)
	}
	lease, err := s.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(at time.Time) {
		t.Helper()
		if _, err := srv.Do("HSET", prefix+"{q}:meta", "deadClaim", fmt.Sprintf("dead %d", at.UnixMilli())); err != nil {
			t.Fatal(err)
		}
	}
	claim(time.Now())
	if err := s.Release(ctx, store.LeaseRef{ID: lease.ID}, store.First); err != nil {
		t.Fatal(err)
	}
	return s, srv, prefix, func() {
		t.Helper()
		claim(time.Now().Add(-deadClaimStale))
		testutil.Until(t, 10*time.Second, 20*time.Millisecond, "the dead letters to move", func() bool {
			return leasedOf(t, s, "q").Leased == 0
		})
		if got, err := s.Lines(ctx, store.DeadLetterList("q")); err != nil || !slices.Equal(got, []string{"poison"}) {
			t.Fatalf("dead letters = %q, %v; want poison", got, err)
		}
	}
}

// Dead letters that a server claimed to move, and did not (it died), are moved by another once
// the claim is stale; a fresh claim is left to its holder.
func TestDeadLettersOfADeadServerAreMoved(t *testing.T) {
	s, srv, prefix, unclaim := stageDeadLetter(t, "ok")
	// On its way: out of the list, still counted as lent, not dead yet.
	time.Sleep(200 * time.Millisecond)
	if info := leasedOf(t, s, "q"); info.Leased != 1 || info.DeadLettered != 0 || info.Length != 1 {
		t.Fatalf("with the claim held: %+v, want 1 line leased, none dead-lettered", info)
	}
	unclaim()
	if info := leasedOf(t, s, "q"); info.DeadLettered != 1 || info.Returned != 0 {
		t.Fatalf("info = %+v, want 1 dead-lettered", info)
	}
	if n, err := srv.Do("EXISTS", prefix+"{q}:dead"); err != nil || n != int64(0) {
		t.Fatalf("the staging list is still there (%v, %v)", n, err)
	}
}

// A lease key of the wrong type stops a lease script before it changes anything, and the error
// names the key: the expiries or the leases before a read takes a line, the returns before an
// Ack consumes one.
func TestWrongTypeLeaseKeyIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	for _, key := range []string{"expires", "leases"} {
		prefix := newPrefix()
		s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
		ctx := t.Context()
		if err := s.Replace(ctx, "q", []string{"a"}, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Do("SET", prefix+"{q}:"+key, "oops"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0); err == nil || !strings.Contains(err.Error(), prefix+"{q}:"+key) {
			t.Fatalf("ReadLeased with a string %s key: %v, want an error naming the key", key, err)
		}
		if got, err := s.Lines(ctx, "q"); err != nil || !slices.Equal(got, []string{"a"}) {
			t.Fatalf("Lines = %q, %v; want a", got, err)
		}
	}

	prefix := newPrefix()
	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	if err := s.Replace(ctx, "q", []string{"a"}, ""); err != nil {
		t.Fatal(err)
	}
	lease, err := s.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Lines went back once: an Ack forgets its lines' returns.
	if _, err := srv.Do("HSET", prefix+"{q}:meta", "returned", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", prefix+"{q}:returns", "oops"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(ctx, store.LeaseRef{ID: lease.ID}); err == nil || !strings.Contains(err.Error(), prefix+"{q}:returns") {
		t.Fatalf("Ack with a string returns key: %v, want an error naming the key", err)
	}
	if info := leasedOf(t, s, "q"); info.Leased != 1 {
		t.Fatalf("after the refused Ack: %+v, want the line still leased", info)
	}
}

// A lease named by its id and a list looks there first; named with the wrong list, it is found
// through its index entry all the same.
func TestLeaseListIsAHint(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
	ctx := t.Context()
	for _, name := range []string{"q", "r"} {
		if err := s.Replace(ctx, name, []string{"a", "b", "c"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	lease := func() store.Lease {
		t.Helper()
		l, err := s.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if err := s.Ack(ctx, store.LeaseRef{ID: lease().ID, List: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(ctx, store.LeaseRef{ID: lease().ID, List: "r"}); err != nil {
		t.Fatal(err)
	}
	released := lease()
	if err := s.Release(ctx, store.LeaseRef{ID: released.ID, List: "r"}, store.First); err != nil {
		t.Fatal(err)
	}
	var ended *store.LeaseEndedError
	if err := s.Ack(ctx, store.LeaseRef{ID: released.ID, List: "r"}); !errors.As(err, &ended) || ended.How != store.LeaseReleased {
		t.Fatalf("Ack of a released lease named with the wrong list: %v", err)
	}
	if err := s.Ack(ctx, store.LeaseRef{ID: store.NewLeaseID(), List: "q"}); !errors.Is(err, store.ErrLeaseNotFound) {
		t.Fatalf("Ack of an unknown id: %v", err)
	}
	if q, r := leasedOf(t, s, "q"), leasedOf(t, s, "r"); q.Length != 1 || q.Leased != 0 || q.Returned != 1 || r.Length != 3 {
		t.Fatalf("q %+v, r %+v; want q: 1 line (2 acknowledged, 1 released), r untouched", q, r)
	}
}

// Reload deletes the leases' keys and index entries, but lines already on their way to the dead
// letters are no lease's: they are not counted in its answer, stay lent, and still arrive. A key
// of the wrong type stops it before it changes anything.
func TestReloadKeepsTheDeadLetters(t *testing.T) {
	s, srv, prefix, unclaim := stageDeadLetter(t, "a", "b", "c")
	ctx := t.Context()
	held, err := s.ReadLeased(ctx, "q", store.First, 2, store.LeaseSpec{TTL: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := srv.Do("SET", prefix+"{q}:returns", "oops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(ctx, "q", []string{"new"}, ""); err == nil || !strings.Contains(err.Error(), prefix+"{q}:returns") {
		t.Fatalf("Reload with a string returns key: %v, want an error naming the key", err)
	}
	if info := leasedOf(t, s, "q"); info.Leased != 3 || info.Length != 1 {
		t.Fatalf("after the refused Reload: %+v, want 3 lines lent, c in the list", info)
	}
	if _, err := srv.Do("DEL", prefix+"{q}:returns"); err != nil {
		t.Fatal(err)
	}

	if n, err := s.Reload(ctx, "q", []string{"new"}, ""); err != nil || n != 2 {
		t.Fatalf("Reload = %d, %v; want 2 (the dead letter is no lease)", n, err)
	}
	for _, key := range []string{prefix + "{q}:leases", prefix + "{q}:expires", s.leaseIndex(held.ID)} {
		if n, err := srv.Do("EXISTS", key); err != nil || n != int64(0) {
			t.Fatalf("%s is still there (%v, %v)", key, n, err)
		}
	}
	if info := leasedOf(t, s, "q"); info.Leased != 1 || info.Length != 1 {
		t.Fatalf("after Reload: %+v, want the dead letter still lent, the new line in the list", info)
	}
	unclaim()
	if got, err := s.Lines(ctx, "q"); err != nil || !slices.Equal(got, []string{"new"}) {
		t.Fatalf("Lines = %q, %v; want new", got, err)
	}
}
