package memory

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// TestConcurrentConsumersReadEveryLineOnce has 64 goroutines drain a 100 000-line list with
// FIRST and RANDOM reads of one to three lines and KEEP off: each line must come out exactly once.
func TestConcurrentConsumersReadEveryLineOnce(t *testing.T) {
	const consumers = 64
	lines := numbered(100_000)
	m := storeWith(lines)
	got := make([][]string, consumers)
	var wg sync.WaitGroup
	for c := range consumers {
		wg.Go(func() {
			pos := []store.Position{store.First, store.Random}[c%2]
			n := 1 + c%3
			for {
				read, err := m.Read(ctx, "l", pos, n, false, 0)
				var short *store.ShortListError
				switch {
				case errors.Is(err, store.ErrEmpty):
					return
				case errors.As(err, &short):
					n = 1
				case err != nil:
					t.Error(err)
					return
				}
				got[c] = append(got[c], read...)
			}
		})
	}
	wg.Wait()

	seen := make(map[string]int, len(lines))
	for _, read := range got {
		for _, line := range read {
			seen[line]++
		}
	}
	for _, line := range lines {
		if seen[line] != 1 {
			t.Fatalf("%s was read %d times", line, seen[line])
		}
	}
	if len(seen) != len(lines) {
		t.Fatalf("read %d distinct lines, the list had %d", len(seen), len(lines))
	}
	checkLines(t, m, "l", []string{})
}

// TestConcurrentListsAreIndependent runs unique adds, rotations and Lengths on many lists at
// once, creating the lists on the way, and checks that no operation was lost.
func TestConcurrentListsAreIndependent(t *testing.T) {
	const lists, adds = 16, 2000
	m := New()
	var wg sync.WaitGroup
	for i := range lists {
		name := fmt.Sprint("list-", i)
		wg.Go(func() {
			for j := range adds {
				if err := m.Add(ctx, name, fmt.Sprint(j%(adds/2)), store.Position(j%2), true); err != nil && !errors.Is(err, store.ErrDuplicate) {
					t.Error(err)
				}
				if _, err := m.Read(ctx, name, store.First, 1, true, 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range adds {
			lengths(m)
		}
	})
	wg.Wait()
	lengths := lengths(m)
	if len(lengths) != lists {
		t.Fatalf("%d lists, want %d", len(lengths), lists)
	}
	for _, ll := range lengths {
		if ll.Length != adds/2 {
			t.Errorf("%s holds %d lines, want %d", ll.Name, ll.Length, adds/2)
		}
	}
	checkInvariants(t, m)
}
