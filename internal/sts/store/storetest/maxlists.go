package storetest

import (
	"slices"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// testMaxLists fills a store to its MaxLists with each kind of change that creates a list, then
// checks that none of them creates one more, that the lists already there take every change, and
// that a refused change leaves no list behind.
func testMaxLists(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{MaxLists: 4})
	must(t, s.Add(ctx, "a", "1", store.Last, false))
	must(t, s.Ensure(ctx, "b"))
	must(t, s.Replace(ctx, "c", []string{"x"}, ""))
	must(t, s.Insert(ctx, "d", []string{"y"}, store.Last))

	checkLimit(t, s.Add(ctx, "e", "1", store.Last, false), store.LimitLists, 4)
	checkLimit(t, s.Add(ctx, "e", "1", store.Random, false), store.LimitLists, 4) // an Add that fails creates no list either
	checkLimit(t, s.Ensure(ctx, "e"), store.LimitLists, 4)
	checkBulkRefused(t, s, []string{"z"}, store.LimitLists, 4)
	checkNotLoaded(t, s, "e")

	must(t, s.Add(ctx, "a", "2", store.Last, false))
	must(t, s.Ensure(ctx, "b"))
	must(t, s.Replace(ctx, "c", []string{"x2"}, "d"))
	must(t, s.Insert(ctx, "d", []string{"y2"}, store.First))
	loaded, _, err := s.LoadOnce(ctx, "c", []string{"x3"}, "d3")
	if err != nil || loaded {
		t.Fatalf("LoadOnce of a list that exists at the limit: %v, %v; want it kept", loaded, err)
	}
	if _, err := s.Reset(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	checkLines(t, s, "d", []string{"y2", "y"})
	infos, err := s.Lists(ctx)
	must(t, err)
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = info.Name
	}
	if !slices.Equal(names, []string{"a", "b", "c", "d"}) {
		t.Fatalf("lists %q, want a, b, c, d", names)
	}
}
