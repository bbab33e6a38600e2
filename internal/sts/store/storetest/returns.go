package storetest

import (
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// testReturnsGoWithTheirLines: the returns counted for a line (towards MaxDeliveries) go with it
// when a RESET or a replacement drops it, even while a lease of the list runs: the line added
// again afterwards starts its count afresh. A line a lease holds keeps its count, since it may
// come back.
func testReturnsGoWithTheirLines(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	ctx := t.Context()
	spec := store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 2}
	for _, drop := range []struct {
		name string
		run  func() error
	}{
		{"RESET", func() error { _, err := s.Reset(ctx, "q"); return err }},
		{"REPLACE", func() error { return s.Replace(ctx, "q", []string{}, "") }},
	} {
		fill(t, s, "q", []string{"leased", "dropped"})
		// Each line goes back once.
		for range 2 {
			must(t, s.Release(ctx, byID(readLeased(t, s, "q", 1, spec)), store.Last))
		}
		lease := readLeased(t, s, "q", 1, spec)
		if len(lease.Lines) != 1 || lease.Lines[0] != "leased" {
			t.Fatalf("%s: leased %q, want leased", drop.name, lease.Lines)
		}
		must(t, drop.run())
		must(t, s.Add(ctx, "q", "dropped", store.Last, false))
		// The line dropped with the list starts afresh: one return does not make it a dead letter.
		must(t, s.Release(ctx, byID(readLeased(t, s, "q", 1, spec)), store.Last))
		checkLines(t, s, "q", []string{"dropped"})
		// The leased line kept its count: its second return makes it one.
		must(t, s.Release(ctx, byID(lease), store.Last))
		checkLines(t, s, "q", []string{"dropped"})
		checkLines(t, s, store.DeadLetterList("q"), []string{"leased"})
		for _, name := range []string{"q", store.DeadLetterList("q")} {
			if _, err := s.Reset(ctx, name); err != nil {
				t.Fatalf("%s: %v", drop.name, err)
			}
		}
	}
}
