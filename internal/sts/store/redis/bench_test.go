package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// benchClients is the concurrency of the benchmarks: a JMeter plan's 64 threads, as in the
// table server's HTTP benchmarks (internal/sts), and redis-benchmark's -c.
const benchClients = 64

// BenchmarkStoreVsRedisBenchmark has benchClients goroutines call the store directly (no HTTP:
// go-redis with autopipelining and the Lua scripts only), alternating three times with
// `redis-benchmark -t lpop -c 64` on the same redis-server. Metric "x-redis-benchmark": the
// store's calls per second over redis-benchmark's requests per second; next to the HTTP
// benchmarks' figure it tells what HTTP costs and what Redis does. "redis-cpu-us/call" is the
// Redis CPU time of one call, beside "redis-cpu-us/lpop".
func BenchmarkStoreVsRedisBenchmark(b *testing.B) {
	srv, s := benchStore(b)
	ctx := context.Background()
	const rounds, lpops = 3, 20_000
	for _, c := range []struct {
		name string
		pos  store.Position
		keep bool
	}{{"ReadFirstKeepFalse", store.First, false}, {"ReadFirstKeepTrue", store.First, true}} {
		b.Run(c.name, func(b *testing.B) {
			n := max(b.N, 20_000)
			lines := make([]string, rounds*n+1000)
			for i := range lines {
				lines[i] = fmt.Sprintf("%020d", i)
			}
			if err := s.Replace(ctx, c.name, lines, ""); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var storeRate, lpopRate, storeCPU, lpopCPU float64
			for range rounds {
				rate, cpu := srv.Costs(b, func() float64 { return srv.BenchmarkLPOP(b, benchClients, lpops) })
				lpopRate, lpopCPU = lpopRate+rate, lpopCPU+cpu
				rate, cpu = srv.Costs(b, func() float64 {
					return testutil.PerSecond(b, benchClients, n, func() error {
						got, err := s.Read(ctx, c.name, c.pos, 1, c.keep, 0)
						if err == nil && (len(got) != 1 || len(got[0]) != 20) {
							err = fmt.Errorf("read %q", got)
						}
						return err
					})
				})
				storeRate, storeCPU = storeRate+rate, storeCPU+cpu
			}
			b.StopTimer()
			b.ReportMetric(storeRate/rounds, "store-calls/s")
			b.ReportMetric(lpopRate/rounds, "redis-benchmark-req/s")
			b.ReportMetric(storeRate/lpopRate, "x-redis-benchmark")
			b.ReportMetric(storeCPU/float64(rounds*n)*1e6, "redis-cpu-us/call")
			b.ReportMetric(lpopCPU/float64(rounds*lpops)*1e6, "redis-cpu-us/lpop")
		})
	}
}

// BenchmarkLeasedRead compares a consuming read with a leased read and its acknowledgement,
// from benchClients goroutines on one redis-server, alternating three times. Metrics: each one's
// calls per second (a lease and its Ack are one call), "x-read" the leased rate over the
// consuming one, and the Redis CPU time of each call.
func BenchmarkLeasedRead(b *testing.B) {
	srv, s := benchStore(b)
	ctx := context.Background()
	const rounds = 3
	n := max(b.N, 20_000)
	lines := make([]string, 2*rounds*n+1000)
	for i := range lines {
		lines[i] = fmt.Sprintf("%020d", i)
	}
	if err := s.Replace(ctx, "q", lines, ""); err != nil {
		b.Fatal(err)
	}
	spec := store.LeaseSpec{TTL: time.Minute}
	b.ResetTimer()
	var readRate, leaseRate, readCPU, leaseCPU float64
	for range rounds {
		rate, cpu := srv.Costs(b, func() float64 {
			return testutil.PerSecond(b, benchClients, n, func() error {
				_, err := s.Read(ctx, "q", store.First, 1, false, 0)
				return err
			})
		})
		readRate, readCPU = readRate+rate, readCPU+cpu
		rate, cpu = srv.Costs(b, func() float64 {
			return testutil.PerSecond(b, benchClients, n, func() error {
				lease, err := s.ReadLeased(ctx, "q", store.First, 1, spec, 0)
				if err != nil {
					return err
				}
				return s.Ack(ctx, store.LeaseRef{ID: lease.ID})
			})
		})
		leaseRate, leaseCPU = leaseRate+rate, leaseCPU+cpu
	}
	b.StopTimer()
	b.ReportMetric(readRate/rounds, "read-calls/s")
	b.ReportMetric(leaseRate/rounds, "lease-ack-calls/s")
	b.ReportMetric(leaseRate/readRate, "x-read")
	b.ReportMetric(readCPU/float64(rounds*n)*1e6, "redis-cpu-us/read")
	b.ReportMetric(leaseCPU/float64(rounds*n)*1e6, "redis-cpu-us/lease-ack")
}

// BenchmarkReadBatchScript measures what one script of READ FIRST KEEP=FALSE costs Redis (INFO
// commandstats: the time Redis spent running it), called one after the other from one goroutine,
// against one LPOP of a plain LIST called the same way in the same run: the batch script without
// its shortcut (readBatch) for a batch of one read and for one of batchLarge reads, and with it
// (scriptReadBatch, whose plainRead answers these) for a batch of one. Metrics: the microseconds
// of each, and over the LPOP's: "batch1-x-lpop", the fixed cost of the whole script (its call,
// its prelude's functions, its type checks and bookkeeping), which batching spreads over the
// reads; "read-in-batch-x-lpop", what each read costs beyond it (a read's share of the large
// batch); "plain1-x-lpop", the shortcut's. A batch of one read through the shortcut meets the
// end of the head, which it leaves to the whole script, once in chunkLines calls.
func BenchmarkReadBatchScript(b *testing.B) {
	const (
		calls      = 2000
		batchLarge = 64
	)
	srv, s := benchStore(b)
	ctx := context.Background()
	lines := make([]string, (2+batchLarge)*calls*b.N+chunkLines)
	for i := range lines {
		lines[i] = fmt.Sprintf("%020d", i)
	}
	if err := s.Replace(ctx, "l", lines, ""); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < calls*b.N; i += 1000 {
		if err := s.client.RPush(ctx, "plain", toAny(lines[i:i+1000])...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	k, e := s.keysOf("l"), batchKey{name: "l", pos: store.First}
	usPerCall := func(command string, call func() error) float64 {
		srv.CommandStats(b)
		for range calls {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		c := srv.CommandStats(b)[command]
		return float64(c.Usec) / float64(c.Calls)
	}
	whole := newScript(readBatch)
	batchOf := func(sc *luaScript, n int) func() error {
		return func() error {
			batch := make([]*batchedRead, n)
			for i := range batch {
				batch[i] = &batchedRead{ctx: ctx, n: 1}
			}
			reply, err := s.evalStrings(ctx, sc, true, s.batchArgs(k, e, batch))
			if err == nil {
				err = s.answer(batch, reply)
			}
			for _, m := range batch {
				if err == nil && (m.err != nil || len(m.lines) != 1) {
					err = fmt.Errorf("a read of the batch got %q, %v", m.lines, m.err)
				}
			}
			return err
		}
	}
	b.ResetTimer()
	var lpop, one, large, plain float64
	for range b.N {
		lpop += usPerCall("lpop", func() error { return s.client.LPop(ctx, "plain").Err() })
		one += usPerCall("evalsha", batchOf(whole, 1))
		large += usPerCall("evalsha", batchOf(whole, batchLarge))
		plain += usPerCall("evalsha", batchOf(readBatchScript, 1))
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(lpop/n, "lpop-us")
	b.ReportMetric(one/n, "batch1-us")
	b.ReportMetric(large/n, "batch64-us")
	b.ReportMetric(plain/n, "plain1-us")
	b.ReportMetric(one/lpop, "batch1-x-lpop")
	b.ReportMetric(large/batchLarge/lpop, "read-in-batch-x-lpop")
	b.ReportMetric(plain/lpop, "plain1-x-lpop")
}

// benchStore starts a redis-server and returns it with a store on it, up.
func benchStore(b *testing.B) (*redistest.Server, *Store) {
	b.Helper()
	if testing.Short() {
		b.Skip("starts a redis-server")
	}
	srv := redistest.Start(b)
	client, err := Connection{URL: srv.URL()}.Client()
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Client: client, KeyPrefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	for deadline := time.Now().Add(10 * time.Second); !s.Up(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("Redis never answered")
		}
	}
	return srv, s
}
