package redis

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestPlainReadDoesWhatTheBatchScriptDoes runs a batch of reads on each state of a list twice
// from the same keys: by scriptReadBatch, whose shortcut plainRead answers the plain batches,
// and by the batch script without it (readBatch). The two must reply the same and leave the same
// keys, value for value; and the shortcut must answer the plain batches and no other (plainRead
// alone, run first from the same keys, says whether it answered), so that neither half of the
// comparison goes untested.
func TestPlainReadDoesWhatTheBatchScriptDoes(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	full := newScript(readBatch)
	// probe is plainRead alone: it replies fallThrough where it leaves the batch to the script.
	probe, fallThrough := newScript(plainRead+"return {-1}"), "[-1] <nil>"
	// where is the script and line a Redis error names, which differ between the two.
	where := regexp.MustCompile(` script: [0-9a-f]+, on @user_script:[0-9]+\.$`)
	hour := store.LeaseSpec{TTL: time.Hour}
	// A state is steps, each of which fails t itself.
	type step = func(*testing.T, *Store)
	then := func(steps ...step) step {
		return func(t *testing.T, s *Store) {
			for _, st := range steps {
				st(t, s)
			}
		}
	}
	loaded := func(n int) step {
		return func(t *testing.T, s *Store) { must(t, s.Replace(ctx, "q", testutil.Numbered("l", n), "")) }
	}
	overwritten := func(suffix string) step {
		return func(t *testing.T, s *Store) {
			must(t, s.client.Set(ctx, s.keysOf("q").list+suffix, "not sts's", 0).Err())
		}
	}
	lease := func(spec store.LeaseSpec, release bool) step {
		return func(t *testing.T, s *Store) {
			l, err := s.ReadLeased(ctx, "q", store.First, 1, spec, 0)
			must(t, err)
			if release {
				must(t, s.Release(ctx, store.LeaseRef{ID: l.ID}, store.First)) // the line the batch reads first
			}
		}
	}
	unique := func(t *testing.T, s *Store) {
		must(t, s.Add(ctx, "q", "u", store.Last, true))
		// The build and its garbage collection run in the background (inBackground).
		testutil.Until(t, 5*time.Second, time.Millisecond, "the unique index to be built", func() bool {
			s.buildingMu.Lock()
			defer s.buildingMu.Unlock()
			return len(s.building) == 0
		})
	}
	// building starts a unique index's build and leaves it halfway: the head counted, the chunks
	// not yet.
	building := func(t *testing.T, s *Store) {
		for range 3 {
			if built, err := s.indexStep(ctx, "q"); err != nil || built {
				t.Fatalf("a step of the build: built %v, %v", built, err)
			}
		}
	}
	three := []int{1, 1, 3} // a batch of three reads, of five lines
	for _, c := range []struct {
		name  string
		state step
		pos   store.Position
		keep  bool
		n     []int    // each read's lines
		ids   []string // each read's request id ("" for none); nil for none at all
		plain bool     // the shortcut answers
	}{
		{name: "FIRST", state: loaded(100), pos: store.First, n: three, plain: true},
		{name: "FIRST, one read", state: loaded(100), pos: store.First, n: []int{2}, plain: true},
		{name: "LAST", state: loaded(100), pos: store.Last, n: three, plain: true},
		{name: "LAST, one read", state: loaded(100), pos: store.Last, n: []int{1}, plain: true},
		{name: "FIRST, the head followed by chunks", state: loaded(1200), pos: store.First, n: three, plain: true},
		{name: "FIRST that empties the head", state: loaded(1200), pos: store.First, n: []int{chunkLines - 1, 1}},
		{name: "LAST, from the last chunk", state: loaded(1200), pos: store.Last, n: three},
		{name: "FIRST, KEEP=TRUE", state: loaded(100), pos: store.First, keep: true, n: three},
		{name: "LAST, KEEP=TRUE", state: loaded(100), pos: store.Last, keep: true, n: three},
		{name: "RANDOM", state: loaded(100), pos: store.Random, n: three},
		{name: "a request id", state: loaded(100), pos: store.First, n: three, ids: []string{"", "r", ""}},
		{name: "a unique index", state: then(loaded(100), unique), pos: store.First, n: three},
		{name: "a unique index being built", state: then(loaded(2000), building), pos: store.First, n: three},
		{name: "a lease running", state: then(loaded(100), lease(hour, false)), pos: store.First, n: three},
		{name: "a line given back", state: then(loaded(100), lease(hour, true)), pos: store.First, n: three},
		{name: "not loaded", state: func(*testing.T, *Store) {}, pos: store.First, n: three},
		{name: "empty", state: loaded(0), pos: store.First, n: three},
		{name: "as long as the batch", state: loaded(5), pos: store.Last, n: three},
		{name: "shorter than the batch", state: loaded(3), pos: store.First, n: three},
		{name: "its head of another type", state: then(loaded(100), func(t *testing.T, s *Store) {
			must(t, s.client.Del(ctx, s.keysOf("q").list).Err())
		}, overwritten("")), pos: store.First, n: three},
		{name: "its chunk directory of another type", state: then(loaded(100), overwritten(":chunks")), pos: store.First, n: three},
		{name: "its meta hash of another type", state: then(loaded(100), overwritten(":meta")), pos: store.First, n: three},
		{name: "its dead letters of another type", state: then(loaded(100), overwritten(":dead")), pos: store.Last, n: three},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := newPrefix()
			s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
			c.state(t, s)
			// The list's keys and the requests' outcomes: the scripts write no others, and the
			// store's housekeeping (lease.go) writes others meanwhile.
			keys := []string{prefix + "{q}*", prefix + "outcome:*"}
			before := dumpKeys(t, s, keys)
			batch := func() []*batchedRead {
				b := make([]*batchedRead, len(c.n))
				for i, n := range c.n {
					b[i] = &batchedRead{ctx: ctx, n: n}
					if c.ids != nil && c.ids[i] != "" {
						b[i].r = &store.Request{ID: c.ids[i], Fingerprint: []byte("READ q"), Window: time.Minute}
					}
				}
				return b
			}
			args := s.batchArgs(s.keysOf("q"), batchKey{name: "q", pos: c.pos, keep: c.keep}, batch())
			run := func(sc *luaScript) (reply string, after map[string]string) {
				// Each from the keys restored, which DUMP then serializes alike when they hold
				// the same (a key restored may be encoded otherwise than the one dumped).
				restoreKeys(t, s, keys, before)
				r, err := s.evalStrings(ctx, sc, true, slices.Clone(args))
				return where.ReplaceAllString(fmt.Sprintf("%v %v", r, err), ""), dumpKeys(t, s, keys)
			}
			answered, _ := run(probe)
			reply, after := run(readBatchScript)
			wantReply, wantAfter := run(full)
			if shortcut := answered != fallThrough; shortcut != c.plain {
				t.Errorf("the shortcut answered: %v, want %v", shortcut, c.plain)
			}
			if reply != wantReply {
				t.Errorf("replied %s, the batch script %s", reply, wantReply)
			}
			for key := range maps.Keys(wantAfter) {
				if _, ok := after[key]; !ok {
					after[key] = "(none)"
				}
			}
			for key, v := range after {
				if v != wantAfter[key] {
					t.Errorf("%s differs from what the batch script left", key)
				}
			}
			if maps.Equal(after, before) && c.plain {
				t.Error("the batch changed nothing")
			}
		})
	}
}

// dumpKeys returns every key that matches one of patterns, with its value as DUMP serializes it
// and whether it expires.
func dumpKeys(t *testing.T, s *Store, patterns []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	dumps := map[string]string{}
	for _, pattern := range patterns {
		iter := s.client.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			v, err := s.client.Dump(ctx, iter.Val()).Result()
			if err != nil {
				t.Fatalf("DUMP %s: %v", iter.Val(), err)
			}
			if ttl, err := s.client.PTTL(ctx, iter.Val()).Result(); err != nil || ttl >= 0 {
				v += fmt.Sprintf(" (expires: %v, %v)", ttl >= 0, err)
			}
			dumps[iter.Val()] = v
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return dumps
}

// restoreKeys makes the keys that match patterns those of dumps (dumpKeys), without expiry.
func restoreKeys(t *testing.T, s *Store, patterns []string, dumps map[string]string) {
	t.Helper()
	ctx := context.Background()
	for key := range dumpKeys(t, s, patterns) {
		if err := s.client.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for key, v := range dumps {
		if err := s.client.Restore(ctx, key, 0, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
