package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// checkEachOnce fails unless the lines taken, all together, are want, each exactly once.
func checkEachOnce(t testing.TB, taken [][]string, want []string) {
	t.Helper()
	seen := make(map[string]int, len(want))
	for _, lines := range taken {
		for _, line := range lines {
			seen[line]++
		}
	}
	for _, line := range want {
		if seen[line] != 1 {
			t.Fatalf("%q was taken %d times", line, seen[line])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d distinct lines taken, the list had %d", len(seen), len(want))
	}
}

// testConsumersTakeEveryLineOnce has goroutines drain a list through both stores with every kind
// of consuming read (FIRST, LAST and RANDOM of one to three lines, and FIND), KEEP off: each
// line must come out exactly once.
func testConsumersTakeEveryLineOnce(t *testing.T, a, b store.Store) {
	const consumers = 32
	lines := numbered(20_000)
	fill(t, a, "l", lines)
	ctx := t.Context()
	stores := []store.Store{a, b}
	got := make([][]string, consumers)
	var wg sync.WaitGroup
	for c := range consumers {
		s := stores[c%2]
		kind, n := (c/2)%4, 1+c%3
		wg.Go(func() {
			for {
				var read []string
				var err error
				if kind == 3 {
					var line string
					line, err = s.Find(ctx, "l", contains(fmt.Sprint(c%10)), false, 0)
					read = []string{line}
				} else {
					read, err = s.Read(ctx, "l", []store.Position{store.First, store.Last, store.Random}[kind], n, false, 0)
				}
				var short *store.ShortListError
				switch {
				case errors.Is(err, store.ErrEmpty), errors.Is(err, store.ErrNoMatch):
					return
				case errors.As(err, &short):
					n = 1
					continue
				case err != nil:
					t.Error(err)
					return
				}
				got[c] = append(got[c], read...)
			}
		})
	}
	wg.Wait()
	checkEachOnce(t, got, lines)
	checkLines(t, a, "l", []string{})
}

// testUniqueAddsAcceptEachLineOnce has goroutines add the same lines with UNIQUE through both
// stores, each in its own order: every line must be accepted once and refused to the others.
func testUniqueAddsAcceptEachLineOnce(t *testing.T, a, b store.Store) {
	const adders, distinct = 16, 300
	ctx := t.Context()
	stores := []store.Store{a, b}
	accepted := make([]atomic.Int32, distinct)
	var wg sync.WaitGroup
	for g := range adders {
		s, pos := stores[g%2], store.Position((g/2)%2)
		wg.Go(func() {
			for j := range distinct {
				v := (j + 37*g) % distinct
				switch err := s.Add(ctx, "l", fmt.Sprint("v", v), pos, true); {
				case err == nil:
					accepted[v].Add(1)
				case !errors.Is(err, store.ErrDuplicate):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for v := range accepted {
		if n := accepted[v].Load(); n != 1 {
			t.Errorf("v%d accepted %d times", v, n)
		}
	}
	got, err := a.Lines(ctx, "l")
	must(t, err)
	want := make([]string, distinct)
	for v := range want {
		want[v] = fmt.Sprint("v", v)
	}
	checkEachOnce(t, [][]string{got}, want)
}

// testConcurrentListsAreIndependent runs unique adds, rotations and Lists on many lists at once,
// through both stores, creating the lists on the way, and checks that no change was lost.
func testConcurrentListsAreIndependent(t *testing.T, a, b store.Store) {
	const lists, adds = 16, 1000
	ctx := t.Context()
	stores := []store.Store{a, b}
	var wg sync.WaitGroup
	for i := range lists {
		name := fmt.Sprint("list-", i)
		adder, reader := stores[i%2], stores[(i+1)%2]
		wg.Go(func() {
			for j := range adds {
				if err := adder.Add(ctx, name, fmt.Sprint(j%(adds/2)), store.Position(j%2), true); err != nil && !errors.Is(err, store.ErrDuplicate) {
					t.Error(err)
				}
				if _, err := reader.Read(ctx, name, store.First, 1, true, 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range adds / 10 {
			if _, err := b.Lists(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	infos, err := a.Lists(ctx)
	must(t, err)
	if len(infos) != lists {
		t.Fatalf("%d lists, want %d", len(infos), lists)
	}
	for _, info := range infos {
		if info.Length != adds/2 {
			t.Errorf("%s holds %d lines, want %d", info.Name, info.Length, adds/2)
		}
	}
}

// testLoadOnceLoadsOnce has eight servers' startup loads of a list race each other through both
// stores while clients consume the list, then race again once the clients have taken lines: one
// load in all, and no consumed line may come back, though each server's dataset has a digest of
// its own (files that differ from one pod to the next).
func testLoadOnceLoadsOnce(t *testing.T, a, b store.Store) {
	const loaders = 8
	lines := numbered(2000)
	ctx := t.Context()
	stores := []store.Store{a, b}

	var loads, taken atomic.Int32
	consumed := make([][]string, len(stores))
	stop := make(chan struct{})
	var consumers sync.WaitGroup
	for c, s := range stores {
		consumers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.Read(ctx, "l", store.First, 1, false, 0)
				switch {
				case err == nil:
					consumed[c] = append(consumed[c], got...)
					taken.Add(1)
				case errors.Is(err, store.ErrNotLoaded), errors.Is(err, store.ErrEmpty):
					time.Sleep(100 * time.Microsecond)
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	// A test that fails early must still stop the consumers before it returns.
	stopConsumers := sync.OnceFunc(func() {
		close(stop)
		consumers.Wait()
	})
	defer stopConsumers()
	race := func() {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range loaders {
			s := stores[g%2]
			wg.Go(func() {
				<-start
				loaded, _, err := s.LoadOnce(ctx, "l", slices.Clone(lines), fmt.Sprintf("the digest of server %d's dataset", g))
				if err != nil {
					t.Error(err)
				}
				if loaded {
					loads.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	race()
	waitFor(t, "the clients to take lines", func() bool { return taken.Load() >= 100 })
	race()
	stopConsumers()

	if n := loads.Load(); n != 1 {
		t.Errorf("%d LoadOnce calls loaded, want 1", n)
	}
	left, err := a.Lines(ctx, "l")
	must(t, err)
	checkEachOnce(t, append(consumed, left), lines)
	if got := infoOf(t, b, "l"); !strings.HasPrefix(got.Digest, "the digest of server ") {
		t.Errorf("Digest = %q, want the digest of the server that loaded", got.Digest)
	}
}
