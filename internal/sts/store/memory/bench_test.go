package memory

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// benchLines is the list length of every benchmark: the size issue 2 sets for READ RANDOM.
const benchLines = 1_000_000

// BenchmarkReadRandomVsFirst interleaves batches of READ FIRST with KEEP and READ RANDOM without
// KEEP on two 1 000 000-line lists, so that both meet the same machine load, and reports the time
// per read of each and RANDOM's throughput as a fraction of FIRST's (issue 2 asks for at least
// 0.5). A third batch, the floor, takes a random line of a plain slice under a mutex: a random
// read cannot avoid that cache miss, while FIRST works on a chunk that stays in cache. Between
// batches, off the three clocks, the lines RANDOM took are added back, so every random read meets
// at least 999 000 lines. ns/op covers all of it and means little.
func BenchmarkReadRandomVsFirst(b *testing.B) {
	const batch = 1000
	lines := numbered(benchLines)
	m := New()
	m.Replace(ctx, "first", slices.Clone(lines), "")
	m.Replace(ctx, "random", slices.Clone(lines), "")
	var mu sync.Mutex
	taken := make([]string, 0, batch)
	var first, random, floor time.Duration
	batches := 0
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			if _, err := m.Read(ctx, "first", store.First, 1, true, 0); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range batch {
			read, err := m.Read(ctx, "random", store.Random, 1, false, 0)
			if err != nil {
				b.Fatal(err)
			}
			taken = append(taken, read[0])
		}
		t2 := time.Now()
		for range batch {
			mu.Lock()
			benchSink = lines[rand.IntN(len(lines))]
			mu.Unlock()
		}
		first, random, floor = first+t1.Sub(t0), random+t2.Sub(t1), floor+time.Since(t2)
		batches++
		for _, line := range taken {
			if err := m.Add(ctx, "random", line, store.Last, false); err != nil {
				b.Fatal(err)
			}
		}
		taken = taken[:0]
	}
	reads := float64(batches * batch)
	b.ReportMetric(float64(first.Nanoseconds())/reads, "first-ns/read")
	b.ReportMetric(float64(random.Nanoseconds())/reads, "random-ns/read")
	b.ReportMetric(float64(floor.Nanoseconds())/reads, "floor-ns/read")
	b.ReportMetric(float64(first)/float64(random), "random/first")
}

// benchSink keeps the floor's reads from being optimised away.
var benchSink string

func BenchmarkAddUnique(b *testing.B) {
	lines := numbered(benchLines)
	m := New()
	added := 0
	for b.Loop() {
		if added == len(lines) {
			b.StopTimer()
			m.Reset(ctx, "l")
			added = 0
			b.StartTimer()
		}
		if err := m.Add(ctx, "l", lines[added], store.Last, true); err != nil {
			b.Fatal(err)
		}
		added++
	}
}

func BenchmarkReplace(b *testing.B) {
	lines := numbered(benchLines)
	m := New()
	for b.Loop() {
		// The same slice every time is safe: nothing changes the list between two Replaces.
		m.Replace(ctx, "l", lines, "")
	}
}

// BenchmarkLeasedReadAndAck interleaves batches of a consuming READ FIRST and of a READ FIRST
// with a lease followed by its ACK, on two 1 000 000-line lists under the same load, and reports
// the time of each and the leased pair's throughput as a fraction of the plain read's (issue 13
// asks the table server for at least 0.45 over HTTP: two requests for one). Lines are put back
// between batches, off the clocks.
func BenchmarkLeasedReadAndAck(b *testing.B) {
	const batch = 1000
	lines := numbered(benchLines)
	m := New()
	m.Replace(ctx, "plain", slices.Clone(lines), "")
	m.Replace(ctx, "leased", slices.Clone(lines), "")
	spec := store.LeaseSpec{TTL: time.Hour}
	var plain, leased time.Duration
	for b.Loop() {
		t0 := time.Now()
		for range batch {
			if _, err := m.Read(ctx, "plain", store.First, 1, false, 0); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range batch {
			le, err := m.ReadLeased(ctx, "leased", store.First, 1, spec, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Ack(ctx, store.LeaseRef{ID: le.ID}); err != nil {
				b.Fatal(err)
			}
		}
		plain, leased = plain+t1.Sub(t0), leased+time.Since(t1)
		for _, name := range []string{"plain", "leased"} {
			if err := m.Insert(ctx, name, lines[:batch], store.First); err != nil {
				b.Fatal(err)
			}
		}
	}
	reads := float64(b.N * batch)
	b.ReportMetric(float64(plain.Nanoseconds())/reads, "ns/read")
	b.ReportMetric(float64(leased.Nanoseconds())/reads, "ns/leased-read+ack")
	b.ReportMetric(float64(plain)/float64(leased), "leased/plain")
}
