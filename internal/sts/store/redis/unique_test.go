package redis

import (
	"errors"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestFirstUniqueAddDoesNotWaitForTheIndex: the first UNIQUE ADD on a long list answers once it
// looked for its line in what the index's build has still to count, while the build goes on in
// the background; so does every UNIQUE ADD until the build ends, through any server, each right:
// a line of the list, wherever it is (counted or not, under a lease), is a duplicate, a new line
// is added once. Lines a change brings meanwhile, or a LOAD, are seen too.
func TestFirstUniqueAddDoesNotWaitForTheIndex(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	a := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	b := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	lines := guardLines("u", 200*chunkLines)
	if err := a.Replace(ctx, "l", lines, ""); err != nil {
		t.Fatal(err)
	}
	held, err := a.ReadLeased(ctx, "l", store.Last, 1, store.LeaseSpec{TTL: time.Hour}, 0)
	if err != nil {
		t.Fatal(err)
	}
	building := func() bool {
		n, err := srv.Do("HEXISTS", prefix+"{l}:meta", "building")
		return err == nil && n == int64(1)
	}
	start := time.Now()
	if err := a.Add(ctx, "l", "new 1", store.Last, true); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !building() {
		t.Fatalf("the index was built before the first UNIQUE ADD answered (%v): it waited for it", took)
	}
	t.Logf("first UNIQUE ADD of a line new to %d lines: %v", len(lines), took)
	checks := 0
	for building() {
		checks++
		// A line counted or not yet, from the front, the middle, the end; the leased one.
		for _, line := range []string{lines[0], lines[len(lines)/2], lines[len(lines)-2], held.Lines[0], "new 1"} {
			if err := b.Add(ctx, "l", line, store.First, true); !errors.Is(err, store.ErrDuplicate) {
				t.Fatalf("UNIQUE ADD of %q, which the list holds, during the build: %v", line, err)
			}
		}
		// A line brought by a non-unique ADD and by a LOAD during the build.
		brought := guardLines("during", checks)[checks-1]
		if err := a.Add(ctx, "l", brought, store.Last, false); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(ctx, "l", brought, store.Last, true); !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("UNIQUE ADD of %q, added during the build: %v", brought, err)
		}
		loaded := guardLines("loaded", 2*chunkLines)
		if checks == 1 {
			if err := a.Insert(ctx, "l", loaded, store.First); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Add(ctx, "l", loaded[chunkLines], store.Last, true); !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("UNIQUE ADD of a line a LOAD brought during the build: %v", err)
		}
		if err := b.Add(ctx, "l", "fresh "+brought, store.Last, true); err != nil {
			t.Fatalf("UNIQUE ADD of a new line during the build: %v", err)
		}
	}
	if checks == 0 {
		t.Fatal("the build ended before a second UNIQUE ADD")
	}
	// Once built, the index counts every line once.
	if err := a.Release(ctx, store.LeaseRef{ID: held.ID}, store.Last); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{lines[1], lines[len(lines)/3], held.Lines[0], "new 1", "fresh " + guardLines("during", 1)[0]} {
		if err := a.Add(ctx, "l", line, store.Last, true); !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("UNIQUE ADD of %q after the build: %v", line, err)
		}
	}
	all, err := a.Lines(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range all {
		if seen[line] {
			t.Fatalf("%q is in the list twice", line)
		}
		seen[line] = true
	}
}

// TestAnIndexOfAnEarlierVersionIsNotTakenForBuilt: a list indexed by a build that kept the
// unique index in one hash (<list>:unique, meta "indexed"), all its lines in its one LIST, is
// not taken for a list whose sharded index is built: a UNIQUE ADD of a line it holds is refused,
// a new line is added once, and the old hash goes with the build of the new index.
func TestAnIndexOfAnEarlierVersionIsNotTakenForBuilt(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	lines := guardLines("old", 3*chunkLines)
	list := prefix + "{l}"
	do := func(args ...string) {
		t.Helper()
		if _, err := srv.Do(args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	// The shape the earlier build left: one LIST, its meta hash, the index in one hash.
	do(append([]string{"RPUSH", list}, lines...)...)
	do("HSET", list+":meta", "created", "1", "registered", "1", "indexed", "1")
	counts := []string{"HSET", list + ":unique"}
	for _, l := range lines {
		counts = append(counts, l, "1")
	}
	do(counts...)
	do("SADD", prefix+"lists", "l")

	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	for _, line := range []string{lines[0], lines[len(lines)/2], lines[len(lines)-1]} {
		if err := s.Add(ctx, "l", line, store.Last, true); !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("UNIQUE ADD of %q, which the list of an earlier version holds: %v", line, err)
		}
	}
	if err := s.Add(ctx, "l", "new", store.Last, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, "l", "new", store.First, true); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("UNIQUE ADD of a line added just before: %v", err)
	}
	testutil.Until(t, 30*time.Second, 10*time.Millisecond, "the index to be built", func() bool {
		n, err := srv.Do("HEXISTS", list+":meta", "sharded")
		return err == nil && n == int64(1)
	})
	if n, err := srv.Do("EXISTS", list+":unique"); err != nil || n != int64(0) {
		t.Errorf("the index of the earlier version is still there once the new one is built: %v %v", n, err)
	}
	// Its hash went to the garbage, which the server that built the new index empties.
	testutil.Until(t, 30*time.Second, 10*time.Millisecond, "the old index's garbage to be emptied", func() bool {
		n, err := srv.Do("EXISTS", list+":garbage")
		return err == nil && n == int64(0)
	})
	if n, err := srv.Do("HEXISTS", list+":meta", "indexed"); err != nil || n != int64(0) {
		t.Errorf("meta \"indexed\" of the earlier version is still there once the new index is built: %v %v", n, err)
	}
	if err := s.Add(ctx, "l", lines[1], store.First, true); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("UNIQUE ADD of a line of the list once the index is built: %v", err)
	}
	all, err := s.Lines(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(lines)+1 || all[len(all)-1] != "new" {
		t.Fatalf("the list holds %d lines, the last %q: want %d, the last \"new\"", len(all), all[len(all)-1], len(lines)+1)
	}
}
