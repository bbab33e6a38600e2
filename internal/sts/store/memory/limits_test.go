package memory

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// cost is what lists of these names holding these lines cost against MaxTotalBytes.
func cost(names []string, lines ...string) int64 {
	var c int64
	for _, name := range names {
		c += int64(store.ListOverhead + len(name))
	}
	for _, line := range lines {
		c += store.LineCost(line)
	}
	return c
}

// TestMaxTotalBytes checks the limit on what all lists hold together, and the count it is
// checked against, which every change keeps: lines with their overhead, and the lists.
func TestMaxTotalBytes(t *testing.T) {
	limit := cost([]string{"l", "m", "n"}, "a", "b", "c", "12345", "12345", "123")
	total := store.LimitError{Limit: store.LimitTotalBytes, Max: limit}
	m := New(WithLimits(store.Limits{MaxTotalBytes: limit}))
	for _, line := range []string{"a", "b", "c"} {
		if err := m.Add(ctx, "l", line, store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Replace(ctx, "m", []string{"12345", "12345", "123"}, ""); err != nil {
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
	if got := limitOf(m.Ensure(ctx, "e")); got != total {
		t.Fatalf("a list that does not fit: %v", got)
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
	want := cost([]string{"l", "m", "n"}, "c", "1234")
	if got := m.Bytes(); got != want {
		t.Fatalf("Bytes = %d, want %d", got, want)
	}
	if err := m.Insert(ctx, "n", []string{"12345", "12345", "1"}, store.Last); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reset(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if got := m.Bytes(); got != want {
		t.Fatalf("Bytes after Reset = %d, want %d", got, want)
	}
	checkInvariants(t, m)
}

// TestLeasesAndOutcomesCount checks that a lease and a REQUEST_ID's outcome are counted while
// they live, and given back when they end: a leased read that does not fit is refused before it
// takes a line.
func TestLeasesAndOutcomesCount(t *testing.T) {
	m := New(WithLimits(store.Limits{MaxTotalBytes: 1 << 20}))
	if err := m.Replace(ctx, "q", []string{"a", "b", "c"}, ""); err != nil {
		t.Fatal(err)
	}
	base := m.Bytes()
	lease, err := m.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Bytes(), base+int64(store.LeaseOverhead+len(lease.ID)); got != want {
		t.Fatalf("Bytes with a lease = %d, want %d", got, want)
	}
	if err := m.Release(ctx, store.LeaseRef{ID: lease.ID}, store.First); err != nil {
		t.Fatal(err)
	}
	if got := m.Bytes(); got != base {
		t.Fatalf("Bytes once the lease ended = %d, want %d", got, base)
	}
	r := store.Request{ID: "r", Fingerprint: []byte("fp"), Window: time.Hour}
	if _, err := m.Read(store.WithRequest(ctx, r), "q", store.First, 1, false, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Bytes(), base-store.LineCost("a")+store.OutcomeCost(r, []string{"a"}); got != want {
		t.Fatalf("Bytes with an outcome = %d, want %d", got, want)
	}
	checkInvariants(t, m)

	full := New(WithLimits(store.Limits{MaxTotalBytes: cost([]string{"q"}, "a", "b") + store.LeaseOverhead}))
	if err := full.Replace(ctx, "q", []string{"a", "b"}, ""); err != nil {
		t.Fatal(err)
	}
	_, err = full.ReadLeased(ctx, "q", store.First, 1, store.LeaseSpec{TTL: time.Hour}, 0)
	if got := limitOf(err); got.Limit != store.LimitTotalBytes {
		t.Fatalf("a lease that does not fit: %v", err)
	}
	checkLines(t, full, "q", []string{"a", "b"})
}

// TestUniqueIndexCounts checks that a list's UNIQUE index is counted, an entry a distinct line,
// from the unique ADD that builds it: one that would not fit is refused and builds nothing, and
// the index's cost goes with the lines (the probe's 22.4M one-byte lines under a budget that
// counted their text only were 992 MB of RSS; an index doubles what each such line takes).
func TestUniqueIndexCounts(t *testing.T) {
	lines := []string{"a", "b", "a", "c"}
	withIndex := cost([]string{"q"}, append(lines, "d")...) + 4*store.UniqueOverhead
	m := New(WithLimits(store.Limits{MaxTotalBytes: withIndex}))
	if err := m.Replace(ctx, "q", slices.Clone(lines), ""); err != nil {
		t.Fatal(err)
	}
	base := m.Bytes()
	if err := m.Add(ctx, "q", "d", store.Last, true); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Bytes(), base+store.LineCost("d")+4*store.UniqueOverhead; got != want {
		t.Fatalf("Bytes with the index of a, b, c, d = %d, want %d", got, want)
	}
	checkInvariants(t, m)
	if _, err := m.Reset(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Bytes(), cost([]string{"q"}); got != want {
		t.Fatalf("Bytes after RESET = %d, want %d: the index's cost outlived it", got, want)
	}

	full := New(WithLimits(store.Limits{MaxTotalBytes: withIndex - 1}))
	if err := full.Replace(ctx, "q", slices.Clone(lines), ""); err != nil {
		t.Fatal(err)
	}
	if got := limitOf(full.Add(ctx, "q", "d", store.Last, true)); got.Limit != store.LimitTotalBytes {
		t.Fatalf("a unique ADD whose index does not fit: %v", got)
	}
	checkLines(t, full, "q", lines)
	checkInvariants(t, full)
}

// TestTotalBytesHoldUnderConcurrency has many goroutines fill lists of their own up to the
// store's limit: together they must never pass it, and the accounting must end exact.
func TestTotalBytesHoldUnderConcurrency(t *testing.T) {
	const limit = 100_000
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
	// A goroutine that starts late may find no room for its list.
	lists := lengths(m)
	var lines int
	for _, l := range lists {
		lines += l.Length
	}
	used := int64(lines)*store.LineCost(line) + int64(len(lists))*cost([]string{"a"})
	if used != m.Bytes() || m.Bytes() > limit || m.Bytes() <= limit-store.LineCost(line) {
		t.Fatalf("%d lines of %d bytes in %d lists, Bytes = %d, limit %d", lines, len(line), len(lists), m.Bytes(), limit)
	}
}
