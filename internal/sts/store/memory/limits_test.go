package memory

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

func checkLimit(t *testing.T, err error, limit string, max int64) {
	t.Helper()
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != limit || le.Max != max {
		t.Fatalf("error %v, want the limit %s=%d", err, limit, max)
	}
}

func TestLimits(t *testing.T) {
	m := New(WithLimits(store.Limits{MaxLinesPerList: 3, MaxTotalBytes: 17, MaxLineBytes: 5}))
	checkLimit(t, m.Add(ctx, "l", "123456", store.Last, false), store.LimitLineBytes, 5)
	checkLimit(t, m.Replace(ctx, "r", []string{"a", "b", "c", "d"}, ""), store.LimitLinesPerList, 3)
	checkLimit(t, m.Insert(ctx, "i", []string{"ok", "toolong"}, store.Last), store.LimitLineBytes, 5)
	if _, err := m.Length(ctx, "r"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("a refused Replace created its list: %v", err)
	}
	for _, line := range []string{"a", "b", "c"} {
		if err := m.Add(ctx, "l", line, store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	checkLimit(t, m.Add(ctx, "l", "d", store.Last, false), store.LimitLinesPerList, 3)
	checkLimit(t, m.Insert(ctx, "l", []string{"d"}, store.First), store.LimitLinesPerList, 3)
	if err := m.Replace(ctx, "m", []string{"12345", "12345", "123"}, ""); err != nil { // 3 + 13 bytes
		t.Fatal(err)
	}
	checkLimit(t, m.Add(ctx, "n", "12345", store.Last, false), store.LimitTotalBytes, 17)
	checkLines(t, m, "n", []string{}) // ADD creates the list before it fails, as the original
	checkLimit(t, m.Replace(ctx, "m", []string{"12345", "12345", "12345"}, ""), store.LimitTotalBytes, 17)
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
	checkLimit(t, m.Add(ctx, "n", "", store.Last, false), store.LimitLinesPerList, 3)
	if _, err := m.Reset(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if got := m.Bytes(); got != 5 {
		t.Fatalf("Bytes after Reset = %d, want 5", got)
	}
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
					checkLimit(t, err, store.LimitTotalBytes, limit)
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

// TestInsertIsOneChange checks that Insert keeps the order of its lines at either end.
func TestInsertIsOneChange(t *testing.T) {
	m := storeWith([]string{"m"})
	if err := m.Insert(ctx, "l", []string{"a", "b"}, store.First); err != nil {
		t.Fatal(err)
	}
	if err := m.Insert(ctx, "l", []string{"y", "z"}, store.Last); err != nil {
		t.Fatal(err)
	}
	checkLines(t, m, "l", []string{"a", "b", "m", "y", "z"})
	if err := m.Insert(ctx, "new", nil, store.Last); err != nil {
		t.Fatal(err)
	}
	checkLines(t, m, "new", []string{})
}
