package memory

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The behaviour that every backend shares is tested by storetest (conformance_test.go); the
// tests of this package are of what only the memory backend has: its chunks and unique index,
// change records and replay, MaxTotalBytes, and the order in which waiting reads are served.

var months = []string{"Jan", "Feb", "Mar", "Apr", "May", "June"}

// ctx is the context of the tests' calls, which never end early unless a test says so.
var ctx = context.Background()

// storeWith returns a store holding one list, "l", with a copy of lines; nil lines means no list.
func storeWith(lines []string) *Memory {
	m := New()
	if lines != nil {
		m.Replace(ctx, "l", slices.Clone(lines), "")
	}
	return m
}

// checkLines fails unless list name holds exactly want.
func checkLines(t *testing.T, m *Memory, name string, want []string) {
	t.Helper()
	got, err := m.Lines(ctx, name)
	if err != nil {
		t.Fatalf("Lines(%q): %v", name, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list %q = %q, want %q", name, got, want)
	}
}

// numbered returns n distinct lines in order.
func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line-%07d", i)
	}
	return lines
}

// lengths is the name and length of every list, sorted by name.
func lengths(m *Memory) []store.ListInfo {
	infos, err := m.Lists(ctx)
	if err != nil {
		panic(err)
	}
	return infos
}

func TestReplaceKeepsTheSliceWithoutPerLineWork(t *testing.T) {
	lines := numbered(100 * chunkCap)
	m := New()
	// Replacing with the same slice again is safe here because nothing changes the list between.
	allocs := testing.AllocsPerRun(5, func() { m.Replace(ctx, "l", lines, "") })
	if maxAllocs := float64(len(lines)/chunkCap + 10); allocs > maxAllocs {
		t.Fatalf("Replace of %d lines made %.0f allocations, want at most %.0f (one per chunk)",
			len(lines), allocs, maxAllocs)
	}
	checkLines(t, m, "l", lines)
}
