package memory

import (
	"maps"
	"slices"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// checkInvariants fails the test if any list of m breaks the engine's internal rules.
func checkInvariants(t *testing.T, m *Memory) {
	t.Helper()
	m.mu.RLock()
	defer m.mu.RUnlock()
	var bytes int64
	for name, l := range m.lists {
		l.mu.Lock()
		checkList(t, name, l)
		bytes += l.size() + int64(store.ListOverhead+len(name)) + int64(len(l.counts))*store.UniqueOverhead
		for _, o := range l.outcomes {
			bytes += o.cost
		}
		l.mu.Unlock()
	}
	if bytes != m.Bytes() {
		t.Fatalf("the lists hold %d bytes (with their own, their outcomes' and their UNIQUE indexes'), the store counts %d", bytes, m.Bytes())
	}
}

func checkList(t *testing.T, name string, l *list) {
	t.Helper()
	cl := &l.lines
	total := 0
	for k, c := range cl.chunks {
		switch {
		case c.lo < 0 || c.lo >= c.hi || c.hi > len(c.buf) || !c.isLive(c.lo) || !c.isLive(c.hi-1):
			t.Fatalf("list %q chunk %d: lines at [%d:%d] of %d slots", name, k, c.lo, c.hi, len(c.buf))
		case len(c.buf) > chunkCap:
			t.Fatalf("list %q chunk %d: %d slots, more than %d", name, k, len(c.buf), chunkCap)
		case 4*c.len() < len(c.buf) && len(c.buf) > minChunkBuf:
			t.Fatalf("list %q chunk %d: %d lines in %d slots", name, k, c.len(), len(c.buf))
		}
		live := 0
		for i, s := range c.buf {
			if c.isLive(i) {
				live++
			} else if s != "" {
				t.Fatalf("list %q chunk %d: free slot %d still holds %q", name, k, i, s)
			}
		}
		for i := len(c.buf); i < chunkCap; i++ {
			if c.isLive(i) {
				t.Fatalf("list %q chunk %d: slot %d beyond the buffer is marked live", name, k, i)
			}
		}
		if live != c.len() {
			t.Fatalf("list %q chunk %d: %d live slots, count says %d", name, k, live, c.len())
		}
		total += c.len()
	}
	if total != cl.n {
		t.Fatalf("list %q: chunks hold %d lines, count says %d", name, total, cl.n)
	}
	var want fenwick
	want.rebuild(max(len(cl.chunks)-1, 0), func(k int) int { return cl.chunks[k].len() })
	if !slices.Equal(cl.inner, want) {
		t.Fatalf("list %q: Fenwick tree %v, want %v", name, cl.inner, want)
	}
	var bytes int64
	for s := range cl.all() {
		bytes += store.LineCost(s)
	}
	if bytes != l.bytes {
		t.Fatalf("list %q: lines of %d bytes, count says %d", name, bytes, l.bytes)
	}
	if l.counts != nil {
		counts := map[string]int{}
		for s := range cl.all() {
			counts[s]++
		}
		if !maps.Equal(l.counts, counts) {
			t.Fatalf("list %q: unique index %v, want %v", name, l.counts, counts)
		}
	}
}

func TestLocateFindsEveryLine(t *testing.T) {
	lines := numbered(7*chunkCap + 3)
	m := storeWith(lines)
	l := m.lists["l"]
	// Random removals make the chunks uneven, so the Fenwick tree has real work to do.
	if _, err := m.Read(ctx, "l", store.Random, 2*chunkCap, false, 0); err != nil {
		t.Fatal(err)
	}
	want := slices.Collect(l.lines.all())
	for i, line := range want {
		k, offset := l.lines.locate(i)
		c := l.lines.chunks[k]
		if got := c.buf[c.slot(offset)]; got != line {
			t.Fatalf("locate(%d) = chunk %d offset %d holding %q, want %q", i, k, offset, got, line)
		}
	}
	checkInvariants(t, m)
}

func TestRandomDrainGivesMemoryBack(t *testing.T) {
	lines := numbered(100 * chunkCap)
	original := lines[:len(lines):len(lines)] // the store owns lines, but the test may look
	m := New()
	m.Replace(ctx, "l", lines, "")
	l := m.lists["l"]

	const left = 1000
	if _, err := m.Read(ctx, "l", store.Random, len(original)-left, false, 0); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, m)
	slots := 0
	for _, c := range l.lines.chunks {
		slots += len(c.buf)
	}
	t.Logf("%d lines left in %d slots over %d chunks", left, slots, len(l.lines.chunks))
	if slots > 4*left+minChunkBuf*len(l.lines.chunks) {
		t.Errorf("%d lines left in %d slots over %d chunks", left, slots, len(l.lines.chunks))
	}
	if n := countNonEmpty(original); n > left {
		t.Errorf("the Replace slice still holds %d lines, only %d remain in the list", n, left)
	}

	if _, err := m.Read(ctx, "l", store.Random, left, false, 0); err != nil {
		t.Fatal(err)
	}
	if l.lines.chunks != nil || l.lines.inner != nil {
		t.Errorf("an emptied list keeps %d chunks and a tree of %d", len(l.lines.chunks), len(l.lines.inner))
	}
	if n := countNonEmpty(original); n > 0 {
		t.Errorf("the Replace slice still holds %d removed lines", n)
	}
}

func countNonEmpty(lines []string) int {
	n := 0
	for _, s := range lines {
		if s != "" {
			n++
		}
	}
	return n
}

func TestUniqueIndexIsLazyAndDroppedWhenEmptied(t *testing.T) {
	m := storeWith(months)
	l := m.lists["l"]
	if _, err := m.Read(ctx, "l", store.First, 1, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, "l", "x", store.Last, false); err != nil {
		t.Fatal(err)
	}
	if l.counts != nil {
		t.Fatal("a list never used with UNIQUE has an index")
	}
	if err := m.Add(ctx, "l", "y", store.Last, true); err != nil {
		t.Fatal(err)
	}
	if l.counts == nil {
		t.Fatal("a unique Add left no index")
	}
	checkInvariants(t, m)
	if _, err := m.Read(ctx, "l", store.First, len(months)+2, false, 0); err != nil {
		t.Fatal(err)
	}
	if l.counts != nil {
		t.Fatal("an emptied list keeps its index")
	}
}

func TestSmallListsStaySmall(t *testing.T) {
	m := New()
	for _, line := range months {
		if err := m.Add(ctx, "l", line, store.First, false); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 * chunkCap { // rotate: the list must not grow or reallocate its way up
		if _, err := m.Read(ctx, "l", store.First, 1, true, 0); err != nil {
			t.Fatal(err)
		}
	}
	l := m.lists["l"]
	if len(l.lines.chunks) != 1 || len(l.lines.chunks[0].buf) > 2*minChunkBuf {
		t.Errorf("a %d-line list uses %d chunks, the first of %d slots",
			len(months), len(l.lines.chunks), len(l.lines.chunks[0].buf))
	}
	checkInvariants(t, m)
}
