package redis

import (
	"fmt"
	"slices"
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

// Dead letters that a server claimed to move, and did not (it died), are moved by another once
// the claim is stale; a fresh claim is left to its holder.
func TestDeadLettersOfADeadServerAreMoved(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	if err := s.Replace(ctx, "q", []string{"poison", "ok"}, ""); err != nil {
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
	// On its way: out of the list, still counted as lent, not dead yet.
	time.Sleep(200 * time.Millisecond)
	if info := leasedOf(t, s, "q"); info.Leased != 1 || info.DeadLettered != 0 || info.Length != 1 {
		t.Fatalf("with the claim held: %+v, want 1 line leased, none dead-lettered", info)
	}
	claim(time.Now().Add(-deadClaimStale))
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "the dead letters to move", func() bool {
		return leasedOf(t, s, "q").Leased == 0
	})
	if got, err := s.Lines(ctx, store.DeadLetterList("q")); err != nil || !slices.Equal(got, []string{"poison"}) {
		t.Fatalf("dead letters = %q, %v; want poison", got, err)
	}
	if info := leasedOf(t, s, "q"); info.DeadLettered != 1 || info.Returned != 0 {
		t.Fatalf("info = %+v, want 1 dead-lettered", info)
	}
	if n, err := srv.Do("EXISTS", prefix+"{q}:dead"); err != nil || n != int64(0) {
		t.Fatalf("the staging list is still there (%v, %v)", n, err)
	}
}

// A lease key of the wrong type stops a lease script before it takes a line.
func TestWrongTypeLeaseKeyIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	if err := s.Replace(ctx, "q", []string{"a"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", prefix+"{q}:expires", "oops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0); err == nil {
		t.Fatal("ReadLeased with a string expiry key succeeded")
	}
	if got, err := s.Lines(ctx, "q"); err != nil || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Lines = %q, %v; want a", got, err)
	}
}
