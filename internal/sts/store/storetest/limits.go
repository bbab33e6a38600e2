package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

func checkLimit(t testing.TB, err error, limit string, max int64) {
	t.Helper()
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != limit || le.Max != max {
		t.Fatalf("error %v, want the limit %s=%d", err, limit, max)
	}
}

// checkBulkRefused checks that Insert, Replace and LoadOnce of lines into a new list are refused
// for limit and create no list: a refused change changes nothing.
func checkBulkRefused(t testing.TB, s store.Store, lines []string, limit string, max int64) {
	t.Helper()
	ctx := t.Context()
	checkLimit(t, s.Insert(ctx, "refused", lines, store.Last), limit, max)
	checkLimit(t, s.Replace(ctx, "refused", slices.Clone(lines), "d"), limit, max)
	loaded, _, err := s.LoadOnce(ctx, "refused", slices.Clone(lines), "d")
	checkLimit(t, err, limit, max)
	if loaded {
		t.Fatal("a refused LoadOnce reports it loaded")
	}
	checkNotLoaded(t, s, "refused")
}

func testMaxLinesPerList(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{MaxLinesPerList: 3})
	checkBulkRefused(t, s, []string{"a", "b", "c", "d"}, store.LimitLinesPerList, 3)

	must(t, s.Replace(ctx, "l", []string{"a", "b", "c"}, "d1")) // a full list
	checkLimit(t, s.Add(ctx, "l", "d", store.Last, false), store.LimitLinesPerList, 3)
	checkLimit(t, s.Add(ctx, "l", "d", store.First, true), store.LimitLinesPerList, 3)
	checkLimit(t, s.Insert(ctx, "l", []string{"d"}, store.First), store.LimitLinesPerList, 3)
	checkLimit(t, s.Replace(ctx, "l", []string{"1", "2", "3", "4"}, "d2"), store.LimitLinesPerList, 3)
	checkLines(t, s, "l", []string{"a", "b", "c"})
	if got := infoOf(t, s, "l"); got.Digest != "d1" {
		t.Fatalf("a refused Replace changed the digest to %q", got.Digest)
	}

	_, err := s.Read(ctx, "l", store.First, 1, false, 0) // a read makes room
	must(t, err)
	must(t, s.Add(ctx, "l", "d", store.Last, false))
	must(t, s.Replace(ctx, "l", []string{"x", "y"}, "")) // the new content counts, not the old
	checkLimit(t, s.Insert(ctx, "l", []string{"1", "2"}, store.Last), store.LimitLinesPerList, 3)
	must(t, s.Insert(ctx, "l", []string{"z"}, store.Last))
	checkLines(t, s, "l", []string{"x", "y", "z"})
}

func testMaxLineBytes(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{MaxLineBytes: 5})
	checkBulkRefused(t, s, []string{"ok", "123456"}, store.LimitLineBytes, 5)

	checkLimit(t, s.Add(ctx, "l", "123456", store.Last, false), store.LimitLineBytes, 5)
	checkLines(t, s, "l", []string{}) // Add creates the list before it fails, as the original
	must(t, s.Add(ctx, "l", "12345", store.Last, false))
	must(t, s.Add(ctx, "l", "éé", store.Last, true)) // 4 bytes
	checkLimit(t, s.Add(ctx, "l", "ééé", store.Last, true), store.LimitLineBytes, 5)
	checkLimit(t, s.Insert(ctx, "l", []string{"ok", "toolong"}, store.First), store.LimitLineBytes, 5)
	checkLimit(t, s.Replace(ctx, "l", []string{"toolong"}, ""), store.LimitLineBytes, 5)
	checkLines(t, s, "l", []string{"12345", "éé"})
	must(t, s.Insert(ctx, "l", []string{"", "abcde"}, store.First))
	checkLines(t, s, "l", []string{"", "abcde", "12345", "éé"})
}
