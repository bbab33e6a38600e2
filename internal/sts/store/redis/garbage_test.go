package redis

import (
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// trashLeft is how many keys of the list l under prefix wait in its garbage: the garbage's
// directory and the trash keys.
func trashLeft(t *testing.T, srv *redistest.Server, prefix string) int {
	t.Helper()
	n := 0
	for _, pattern := range []string{prefix + "{l}:garbage", prefix + "{l}:trash:*"} {
		reply, err := srv.Do("KEYS", pattern)
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := reply.([]any)
		n += len(keys)
	}
	return n
}

// TestBigStructuresGoInSteps: a RESET, REPLACE or RELOAD that drops a unique index, the returns
// or the leases' expiries too big to free in one step renames them to trash keys that its server
// empties in bounded steps, in the background, instead of UNLINKing them (which has a thread of
// Redis free them all at once): Redis frees no object in its background thread, the list answers
// at once as it should, and nothing of the garbage is left once emptied.
func TestBigStructuresGoInSteps(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	lines := guardLines("g", 64*chunkLines)
	indexed := func() {
		t.Helper()
		must(t, s.Replace(ctx, "l", lines, ""))
		must(t, s.Add(ctx, "l", "new", store.Last, true))
		testutil.Until(t, time.Minute, 10*time.Millisecond, "the index to be built", func() bool {
			n, err := srv.Do("HEXISTS", prefix+"{l}:meta", "sharded")
			return err == nil && n == int64(1)
		})
		testutil.Until(t, time.Minute, 10*time.Millisecond, "the garbage to be emptied", func() bool {
			return trashLeft(t, srv, prefix) == 0
		})
	}
	for _, drop := range []struct {
		name string
		run  func() error
	}{
		{"RESET", func() error { _, err := s.Reset(ctx, "l"); return err }},
		{"LOAD REPLACE", func() error { return s.Replace(ctx, "l", lines[:10], "") }},
		{"RELOAD", func() error { _, err := s.Reload(ctx, "l", lines[:10], ""); return err }},
	} {
		indexed()
		freed := memoryInfo(t, srv, "lazyfreed_objects")
		must(t, drop.run())
		if n, err := srv.Do("EXISTS", prefix+"{l}:unique:0"); err != nil || n != int64(0) {
			t.Fatalf("%s: the index's first shard is still there (%v, %v)", drop.name, n, err)
		}
		if err := s.Add(ctx, "l", lines[len(lines)-1], store.Last, true); err != nil {
			t.Fatalf("%s: UNIQUE ADD of a line the list no longer holds: %v", drop.name, err)
		}
		testutil.Until(t, time.Minute, 10*time.Millisecond, "the garbage to be emptied", func() bool {
			return trashLeft(t, srv, prefix) == 0
		})
		// Redis 6.2 and later count the objects their background thread freed: what UNLINK
		// leaves it of a structure of more than 64 members.
		if n := memoryInfo(t, srv, "lazyfreed_objects") - freed; n > 0 {
			t.Errorf("%s: Redis freed %d objects in its background thread", drop.name, n)
		}
	}
}

// TestGarbageOfAServerThatDiedIsEmptied: garbage that the server which dropped it left (it died
// before its background steps) is emptied by another server, which the sweep sends to the list.
func TestGarbageOfAServerThatDiedIsEmptied(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	a := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	must(t, a.Replace(ctx, "l", guardLines("d", 64*chunkLines), ""))
	must(t, a.Add(ctx, "l", "new", store.Last, true))
	testutil.Until(t, time.Minute, 10*time.Millisecond, "the index to be built", func() bool {
		n, err := srv.Do("HEXISTS", prefix+"{l}:meta", "sharded")
		return err == nil && n == int64(1)
	})
	// The RESET's script alone: its server died before its chores and garbage.
	if _, err := a.runList(ctx, resetScript, a.keysOf("l"), nil, nil, true); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	if n, err := srv.Do("EXISTS", prefix+"{l}:garbage"); err != nil || n != int64(1) {
		t.Fatalf("the RESET left no garbage (%v, %v)", n, err)
	}
	b := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	b.sweep(ctx)
	testutil.Until(t, time.Minute, 10*time.Millisecond, "the garbage to be emptied", func() bool {
		return trashLeft(t, srv, prefix) == 0
	})
}
