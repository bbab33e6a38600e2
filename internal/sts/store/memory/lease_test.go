package memory

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// leasedIn is the number of lines leased from list q of m.
func leasedIn(m *Memory) int {
	for _, info := range lengths(m) {
		if info.Name == "q" {
			return info.Leased
		}
	}
	return -1
}

// leaseState is what a store holds of its leases, list by list: its lines, counts and leases.
func leaseState(t *testing.T, m *Memory) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, l := range m.sortedLists() {
		l.mu.Lock()
		leases := slices.SortedFunc(maps.Values(l.leases), func(a, b *lease) int { return a.expires.Compare(b.expires) })
		desc := fmt.Sprintf("lines %q leased %d/%dB returned %d dead %d returns %v;", slices.Collect(l.lines.all()),
			l.leasedLines, l.leasedBytes, l.returned, l.deadLettered, l.returns)
		for _, le := range leases {
			desc += fmt.Sprintf(" %s %q until %d max %d;", le.id, le.lines, le.expires.UnixMilli(), le.maxDeliveries)
		}
		l.mu.Unlock()
		state[l.name] = desc
	}
	return state
}

// TestLeasesAreRestoredFromRecordsAndSnapshots makes every kind of lease change on a recording
// store, then restores a store from its records and another from its Dump: both hold the same
// leases, with the same expiries, and their restored leases run (one expires, one is
// acknowledged by its id).
func TestLeasesAreRestoredFromRecordsAndSnapshots(t *testing.T) {
	m := New()
	rec := &tape{}
	m.StartRecording(rec)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Replace(ctx, "q", []string{"a", "b", "c", "d", "e", "f", "g"}, ""))
	hour := store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 2}
	kept, err := m.ReadLeased(ctx, "q", store.First, 2, hour, 0) // a b
	must(err)
	must(m.Ack(ctx, store.LeaseRef{List: "q", Line: "b"}))
	_, err = m.Extend(ctx, store.LeaseRef{ID: kept.ID}, 2*time.Hour)
	must(err)
	found, err := m.FindLeased(ctx, "q", func(s string) (bool, error) { return s == "e", nil }, hour, 0)
	must(err)
	must(m.Release(ctx, store.LeaseRef{ID: found.ID}, store.Last))                             // c d f g e
	_, err = m.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Millisecond}, 0) // c
	must(err)
	for range 2 { // e, released once already, goes to the dead letters; then g goes back
		le, err := m.ReadLeased(ctx, "q", store.Last, 1, store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 2}, 0)
		must(err)
		must(m.Release(ctx, store.LeaseRef{ID: le.ID}, store.Last))
	}
	testutil.Until(t, 10*time.Second, time.Millisecond, "the brief lease to expire", func() bool { return leasedIn(m) == 1 })
	pending, err := m.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: 300 * time.Millisecond}, 0) // c
	must(err)

	want := leaseState(t, m)
	replayed := New()
	rec.replayInto(t, replayed)
	if got := leaseState(t, replayed); !maps.Equal(got, want) {
		t.Fatalf("replayed:\n%v\nwant\n%v", got, want)
	}
	snapped := New()
	must(m.Dump(func(name string, seq uint64, lines []string, leases []byte) error {
		return snapped.RestoreList(name, seq, lines, leases)
	}))
	if got := leaseState(t, snapped); !maps.Equal(got, want) {
		t.Fatalf("restored from a snapshot:\n%v\nwant\n%v", got, want)
	}
	checkInvariants(t, replayed)
	checkInvariants(t, snapped)

	for _, r := range []*Memory{replayed, snapped} {
		r.StartRecording(&tape{})
		must(r.Ack(ctx, store.LeaseRef{ID: kept.ID}))
		testutil.Until(t, 10*time.Second, time.Millisecond, "the restored lease to expire", func() bool { return leasedIn(r) == 0 })
		if got, _ := r.Lines(ctx, "q"); !slices.Equal(got, []string{"c", "d", "f", "g"}) {
			t.Errorf("after the expiry: %q", got)
		}
		if err := r.Ack(ctx, store.LeaseRef{ID: pending.ID}); err == nil {
			t.Error("an expired lease was acknowledged")
		}
		if got, _ := r.Lines(ctx, store.DeadLetterList("q")); !slices.Equal(got, []string{"e"}) {
			t.Errorf("dead letters: %q", got)
		}
	}
}

// The returns counted for a line go with it: a RESET or a replacement drops those of the lines it
// drops, even while a lease runs (whose own lines keep theirs), so that a client cycling new
// lines through leases and RESETs cannot grow the map (and hold every line's text) for ever.
func TestReturnsGoWithTheirLines(t *testing.T) {
	m := New()
	if err := m.Replace(ctx, "q", []string{"held"}, ""); err != nil {
		t.Fatal(err)
	}
	held, err := m.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := m.Add(ctx, "q", fmt.Sprintf("line %d", i), store.Last, false); err != nil {
			t.Fatal(err)
		}
		lease, err := m.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Release(ctx, store.LeaseRef{ID: lease.ID}, store.First); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Reset(ctx, "q"); err != nil {
			t.Fatal(err)
		}
	}
	l := m.lookup("q")
	l.mu.Lock()
	counted := len(l.returns)
	l.mu.Unlock()
	if counted != 0 {
		t.Fatalf("after 300 lines returned then reset, %d returns are still counted", counted)
	}
	// The held lease's line keeps its count through a RESET: it may come back yet.
	if err := m.Release(ctx, store.LeaseRef{ID: held.ID}, store.First); err != nil {
		t.Fatal(err)
	}
	lease, err := m.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	n := l.returns["held"]
	l.mu.Unlock()
	if n != 1 || lease.Lines[0] != "held" {
		t.Fatalf("the held line's returns after a RESET: %d, want 1", n)
	}
}
