package store

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func checkLimit(t *testing.T, err error, limit string, max int64) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit || le.Max != max {
		t.Fatalf("error %v, want the limit %s=%d", err, limit, max)
	}
}

func TestLimits(t *testing.T) {
	m := NewMemory(WithLimits(Limits{MaxLinesPerList: 3, MaxTotalBytes: 17, MaxLineBytes: 5}))
	checkLimit(t, m.Add("l", "123456", Last, false), LimitLineBytes, 5)
	checkLimit(t, m.Replace("r", []string{"a", "b", "c", "d"}), LimitLinesPerList, 3)
	checkLimit(t, m.Insert("i", []string{"ok", "toolong"}, Last), LimitLineBytes, 5)
	if _, err := m.Length("r"); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("a refused Replace created its list: %v", err)
	}
	for _, line := range []string{"a", "b", "c"} {
		if err := m.Add("l", line, Last, false); err != nil {
			t.Fatal(err)
		}
	}
	checkLimit(t, m.Add("l", "d", Last, false), LimitLinesPerList, 3)
	checkLimit(t, m.Insert("l", []string{"d"}, First), LimitLinesPerList, 3)
	if err := m.Replace("m", []string{"12345", "12345", "123"}); err != nil { // 3 + 13 bytes
		t.Fatal(err)
	}
	checkLimit(t, m.Add("n", "12345", Last, false), LimitTotalBytes, 17)
	checkLines(t, m, "n", []string{}) // ADD creates the list before it fails, as the original
	checkLimit(t, m.Replace("m", []string{"12345", "12345", "12345"}), LimitTotalBytes, 17)
	checkLines(t, m, "m", []string{"12345", "12345", "123"}) // unchanged
	if err := m.Replace("m", []string{"1234"}); err != nil { // the old content's bytes are given back
		t.Fatal(err)
	}
	if _, err := m.Read(ctx, "l", First, 2, false, 0); err != nil { // reads give bytes back
		t.Fatal(err)
	}
	if got := m.Bytes(); got != 5 {
		t.Fatalf("Bytes = %d, want 5", got)
	}
	if err := m.Insert("n", []string{"12345", "12345", "1"}, Last); err != nil {
		t.Fatal(err)
	}
	checkLimit(t, m.Add("n", "", Last, false), LimitLinesPerList, 3)
	if _, err := m.Reset("n"); err != nil {
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
	m := NewMemory(WithLimits(Limits{MaxTotalBytes: limit}))
	line := strings.Repeat("x", 7)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			name := string(rune('a' + g))
			for {
				err := m.Add(name, line, Last, false)
				if err != nil {
					checkLimit(t, err, LimitTotalBytes, limit)
					return
				}
			}
		})
	}
	wg.Wait()
	var lines int
	for _, l := range m.Lengths() {
		lines += l.Length
	}
	if int64(lines*len(line)) != m.Bytes() || m.Bytes() > limit || m.Bytes() <= limit-int64(len(line)) {
		t.Fatalf("%d lines of %d bytes, Bytes = %d, limit %d", lines, len(line), m.Bytes(), limit)
	}
}

// TestInsertIsOneChange checks that Insert keeps the order of its lines at either end.
func TestInsertIsOneChange(t *testing.T) {
	m := storeWith([]string{"m"})
	if err := m.Insert("l", []string{"a", "b"}, First); err != nil {
		t.Fatal(err)
	}
	if err := m.Insert("l", []string{"y", "z"}, Last); err != nil {
		t.Fatal(err)
	}
	checkLines(t, m, "l", []string{"a", "b", "m", "y", "z"})
	if err := m.Insert("new", nil, Last); err != nil {
		t.Fatal(err)
	}
	checkLines(t, m, "new", []string{})
}
