package redis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestChunksKeepTheListsOrder drives a list of several chunks (scripts.go) and the memory
// backend's through the same random changes, and compares both lists after each: every line
// where it should be, whatever the chunks the change crossed, split, merged or made. Lines are
// distinct, so that a RANDOM read on Redis is mirrored on memory by taking the line it read.
func TestChunksKeepTheListsOrder(t *testing.T) {
	srv := redistest.Start(t)
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { chunksKeepTheListsOrder(t, srv, seed) })
	}
}

func chunksKeepTheListsOrder(t *testing.T, srv *redistest.Server, seed uint64) {
	prefix := newPrefix()
	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	m := memory.New()
	t.Cleanup(func() { m.Close() })
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 24))
	next := 0
	fresh := func(n int) []string {
		lines := guardLines(fmt.Sprintf("n%d-", next), n)
		next++
		return lines
	}
	both := func(what string, f func(st store.Store) error) {
		t.Helper()
		errR, errM := f(s), f(m)
		if (errR == nil) != (errM == nil) || errR != nil && errR.Error() != errM.Error() {
			t.Fatalf("%s: Redis %v, memory %v", what, errR, errM)
		}
	}
	mirror := func(line string, keep bool) {
		t.Helper()
		got, err := m.Find(ctx, "l", func(l string) (bool, error) { return l == line, nil }, keep, 0)
		if err != nil || got != line {
			t.Fatalf("memory has no %q (%v)", line, err)
		}
	}
	first := guardLines("a", 3*chunkLines+7)
	if seed%2 == 1 {
		// A list of an earlier version: one LIST of every line.
		both("load", func(st store.Store) error { return st.Ensure(ctx, "l") })
		for part := range slices.Chunk(first, 1000) {
			if err := s.cmd.RPush(ctx, s.keysOf("l").list, toAny(part)...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Insert(ctx, "l", first, store.Last); err != nil {
			t.Fatal(err)
		}
	} else {
		both("load", func(st store.Store) error { return st.Replace(ctx, "l", first, "") })
	}
	// Leases held across changes, by both stores, to end later.
	type held struct{ redis, memory store.Lease } // redis: by its line
	var leases []held
	for op := range 400 {
		var what string
		switch r := rng.IntN(24); {
		case r < 3:
			line, pos, unique := fresh(1)[0], store.Position(rng.IntN(2)), rng.IntN(2) == 0
			what = fmt.Sprintf("ADD %v unique %v", pos, unique)
			both(what, func(st store.Store) error { return st.Add(ctx, "l", line, pos, unique) })
		case r < 4:
			lines, _ := m.Lines(ctx, "l")
			if len(lines) == 0 {
				continue
			}
			line := lines[rng.IntN(len(lines))]
			what = "ADD UNIQUE of a line the list holds"
			both(what, func(st store.Store) error { return st.Add(ctx, "l", line, store.Last, true) })
		case r < 7:
			n, pos, keep := 1+rng.IntN(chunkLines/2), store.Position(rng.IntN(2)), rng.IntN(2) == 0
			what = fmt.Sprintf("READ %v of %d keep %v", pos, n, keep)
			both(what, func(st store.Store) error { _, err := st.Read(ctx, "l", pos, n, keep, 0); return err })
		case r < 11:
			// Now and then a burst, which thins the chunks until they merge.
			keep, reads := rng.IntN(2) == 0, 1
			if rng.IntN(4) == 0 {
				reads = 300
			}
			what = fmt.Sprintf("%d READ RANDOM keep %v", reads, keep)
			for range reads {
				got, err := s.Read(ctx, "l", store.Random, 1+rng.IntN(3), keep, 0)
				if err != nil {
					break
				}
				for _, line := range got {
					mirror(line, keep)
				}
			}
		case r < 13:
			lines, _ := m.Lines(ctx, "l")
			if len(lines) == 0 {
				continue
			}
			line, keep := lines[rng.IntN(len(lines))], rng.IntN(2) == 0
			what = fmt.Sprintf("FIND at %d keep %v", slices.Index(lines, line), keep)
			both(what, func(st store.Store) error {
				_, err := st.Find(ctx, "l", func(l string) (bool, error) { return l == line, nil }, keep, 0)
				return err
			})
		case r < 15:
			n, pos := rng.IntN(3*chunkLines), store.Position(rng.IntN(2))
			what = fmt.Sprintf("LOAD %v of %d", pos, n)
			lines := fresh(n)
			both(what, func(st store.Store) error { return st.Insert(ctx, "l", lines, pos) })
		case r < 17:
			n, pos := 1+rng.IntN(chunkLines), store.Position(rng.IntN(2))
			what = fmt.Sprintf("leased READ %v of %d, released %v", pos, n, store.Position(1-pos))
			var leases [2]store.Lease
			both(what, func(st store.Store) error {
				lease, err := st.ReadLeased(ctx, "l", pos, n, store.LeaseSpec{TTL: time.Hour}, 0)
				leases[slices.Index([]store.Store{s, m}, st)] = lease
				return err
			})
			if leases[0].ID != "" {
				both(what, func(st store.Store) error {
					return st.Release(ctx, store.LeaseRef{ID: leases[slices.Index([]store.Store{s, m}, st)].ID}, 1-pos)
				})
			}
		case r < 19:
			n, pos := 1+rng.IntN(3), store.Position(rng.IntN(3))
			what = fmt.Sprintf("leased READ %v of %d, held", pos, n)
			got, err := s.ReadLeased(ctx, "l", pos, n, store.LeaseSpec{TTL: time.Hour}, 0)
			if err != nil {
				continue
			}
			// Redis holds one lease of n lines, ended a line at a time; memory a lease a line.
			for _, line := range got.Lines {
				l, err := m.FindLeased(ctx, "l", func(l string) (bool, error) { return l == line, nil }, store.LeaseSpec{TTL: time.Hour}, 0)
				if err != nil {
					t.Fatalf("%s: memory has no %q (%v)", what, line, err)
				}
				leases = append(leases, held{redis: store.Lease{List: "l", Lines: []string{line}}, memory: l})
			}
		case r < 21:
			if len(leases) == 0 {
				continue
			}
			i := rng.IntN(len(leases))
			h := leases[i]
			leases = slices.Delete(leases, i, i+1)
			line := h.memory.Lines[0]
			if rng.IntN(2) == 0 {
				what = "ACK of a held line"
				errR := s.Ack(ctx, store.LeaseRef{List: "l", Line: line})
				errM := m.Ack(ctx, store.LeaseRef{ID: h.memory.ID})
				if errR != nil || errM != nil {
					t.Fatalf("%s: Redis %v, memory %v", what, errR, errM)
				}
			} else {
				pos := store.Position(rng.IntN(2))
				what = fmt.Sprintf("RELEASE %v of a held line", pos)
				errR := s.Release(ctx, store.LeaseRef{List: "l", Line: line}, pos)
				errM := m.Release(ctx, store.LeaseRef{ID: h.memory.ID}, pos)
				if errR != nil || errM != nil {
					t.Fatalf("%s: Redis %v, memory %v", what, errR, errM)
				}
			}
		case r < 22:
			what = "RESET"
			both(what, func(st store.Store) error { _, err := st.Reset(ctx, "l"); return err })
		default:
			n := rng.IntN(4 * chunkLines)
			what = fmt.Sprintf("LOAD REPLACE of %d", n)
			lines := fresh(n)
			both(what, func(st store.Store) error { return st.Replace(ctx, "l", lines, "") })
		}
		k := s.keysOf("l")
		if head, chunks := s.cmd.LLen(ctx, k.list).Val(), s.cmd.LLen(ctx, k.chunks()).Val(); head == 0 && chunks > 0 {
			t.Fatalf("op %d, after %s: an empty head before %d chunks", op, what, chunks)
		}
		want, _ := m.Lines(ctx, "l")
		got, err := s.Lines(ctx, "l")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("op %d, after %s: Redis holds %d lines (%v), memory %d; first difference at %d", op, what, len(got), err, len(want), firstDifference(got, want))
		}
		if n, err := s.Length(ctx, "l"); err != nil || n != len(want) {
			t.Fatalf("op %d, after %s: LENGTH %d (%v), want %d", op, what, n, err, len(want))
		}
		if len(want) > 0 {
			offset := rng.IntN(len(want))
			page, length, err := s.Page(ctx, "l", offset, 100)
			if err != nil || length != len(want) || !slices.Equal(page, want[offset:min(offset+100, len(want))]) {
				t.Fatalf("op %d, after %s: Page at %d: %d lines of %d (%v)", op, what, offset, len(page), length, err)
			}
		}
	}
	// The unique index followed every change.
	lines, _ := m.Lines(ctx, "l")
	for _, line := range lines[:min(50, len(lines))] {
		if err := s.Add(ctx, "l", line, store.Last, true); !errors.Is(err, store.ErrDuplicate) {
			t.Fatalf("ADD UNIQUE of %q, which the list holds: %v", line, err)
		}
	}
	// Nothing is left behind by the chores but the list's own keys, once the garbage, emptied in
	// the background, is.
	testutil.Until(t, time.Minute, 10*time.Millisecond, "the garbage to be emptied", func() bool {
		n, err := srv.Do("EXISTS", prefix+"{l}:garbage")
		return err == nil && n == int64(0)
	})
	keys, err := srv.Do("KEYS", prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys.([]any) {
		if k := key.(string); strings.Contains(k, ":trash:") || strings.Contains(k, ":keep:") || strings.Contains(k, ":staging:") || strings.HasSuffix(k, ":chores") {
			t.Errorf("%s is left", k)
		}
	}
}

func toAny(lines []string) []any {
	values := make([]any, len(lines))
	for i, line := range lines {
		values[i] = line
	}
	return values
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRandomReadsAcrossChunks: a RANDOM read draws every line of a list of several chunks,
// of different sizes, alike; and reads that thin the chunks merge them, so that they stay
// mostly full (the draw's cost depends on it).
func TestRandomReadsAcrossChunks(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
	ctx := t.Context()
	const chunks = 4
	lines := guardLines("r", chunks*chunkLines)
	if err := s.Replace(ctx, "l", lines, ""); err != nil {
		t.Fatal(err)
	}
	// Chunks of different sizes: a quarter of the second one and the last lines go.
	for _, line := range slices.Concat(lines[chunkLines:chunkLines*5/4], lines[len(lines)-100:]) {
		if _, err := s.Find(ctx, "l", func(l string) (bool, error) { return l == line, nil }, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	byChunk := make([]int, chunks)
	const reads = 20000
	for range reads {
		got, err := s.Read(ctx, "l", store.Random, 1, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(lines, got[0])
		byChunk[i/chunkLines]++
	}
	held := []int{chunkLines, chunkLines * 3 / 4, chunkLines, chunkLines - 100}
	total := 0
	for _, n := range held {
		total += n
	}
	for c, n := range held {
		// Binomial: six standard deviations, a false failure below 1e-8.
		p := float64(n) / float64(total)
		want, sd := reads*p, math.Sqrt(reads*p*(1-p))
		if got := float64(byChunk[c]); math.Abs(got-want) > 6*sd {
			t.Errorf("lines of chunk %d drawn %v times, want %.0f ± %.0f", c, got, want, 6*sd)
		}
	}

	n, err := s.Length(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	for ; n > chunkLines/2; n-- {
		if _, err := s.Read(ctx, "l", store.Random, 1, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	k := s.keysOf("l")
	if ids := s.cmd.LRange(ctx, k.chunks(), 0, -1).Val(); len(ids) > 2 {
		sizes := []int64{s.cmd.LLen(ctx, k.list).Val()}
		for _, id := range ids {
			sizes = append(sizes, s.cmd.LLen(ctx, k.chunk(id)).Val())
		}
		t.Errorf("%d lines left in chunks of %v lines: thinned chunks were not merged", chunkLines/2, sizes)
	}
}
