package memory

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// limitOf is the limit that err names, or none.
func limitOf(err error) store.LimitError {
	var le *store.LimitError
	if errors.As(err, &le) {
		return *le
	}
	return store.LimitError{}
}

// TestMaxTotalBytes checks the limit on the lines of all lists together, and the byte count it
// is checked against, which every change keeps.
func TestMaxTotalBytes(t *testing.T) {
	total := store.LimitError{Limit: store.LimitTotalBytes, Max: 17}
	m := New(WithLimits(store.Limits{MaxTotalBytes: 17}))
	for _, line := range []string{"a", "b", "c"} {
		if err := m.Add(ctx, "l", line, store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Replace(ctx, "m", []string{"12345", "12345", "123"}, ""); err != nil { // 3 + 13 bytes
		t.Fatal(err)
	}
	if got := limitOf(m.Add(ctx, "n", "12", store.Last, false)); got != total {
		t.Fatalf("an Add over the limit: %v", got)
	}
	checkLines(t, m, "n", []string{}) // ADD creates the list before it fails, as the original
	if got := limitOf(m.Insert(ctx, "i", []string{"12"}, store.Last)); got != total {
		t.Fatalf("an Insert over the limit: %v", got)
	}
	if _, err := m.Length(ctx, "i"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("a refused Insert created its list: %v", err)
	}
	if got := limitOf(m.Replace(ctx, "m", []string{"12345", "12345", "12345"}, "")); got != total {
		t.Fatalf("a Replace over the limit: %v", got)
	}
	checkLines(t, m, "m", []string{"12345", "12345", "123"})          // unchanged
	if err := m.Replace(ctx, "m", []string{"1234"}, ""); err != nil { // the old content's bytes are given back
		t.Fatal(err)
	}
	if _, err := m.Read(ctx, "l", store.First, 2, false, 0); err != nil { // reads give bytes back
		t.Fatal(err)
	}
	if got := m.Bytes(); got != 5 {
		t.Fatalf("Bytes = %d, want 5", got)
	}
	if err := m.Insert(ctx, "n", []string{"12345", "12345", "1"}, store.Last); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if got := m.Bytes(); got != 5 {
		t.Fatalf("Bytes after Reset = %d, want 5", got)
	}
	checkInvariants(t, m)
}

// TestTotalBytesHoldUnderConcurrency has many goroutines fill lists of their own up to the
// store's limit: together they must never pass it, and the accounting must end exact.
func TestTotalBytesHoldUnderConcurrency(t *testing.T) {
	const limit = 10_000
	m := New(WithLimits(store.Limits{MaxTotalBytes: limit}))
	line := strings.Repeat("x", 7)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			name := string(rune('a' + g))
			for {
				err := m.Add(ctx, name, line, store.Last, false)
				if err != nil {
					if limitOf(err) != (store.LimitError{Limit: store.LimitTotalBytes, Max: limit}) {
						t.Error(err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	var lines int
	for _, l := range lengths(m) {
		lines += l.Length
	}
	if int64(lines*len(line)) != m.Bytes() || m.Bytes() > limit || m.Bytes() <= limit-int64(len(line)) {
		t.Fatalf("%d lines of %d bytes, Bytes = %d, limit %d", lines, len(line), m.Bytes(), limit)
	}
}
