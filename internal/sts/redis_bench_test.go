package sts

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/sts/store/redis/redisstoretest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// Benchmarks of the table server on the Redis backend. Each starts its own redis-server and
// measures the table server against a baseline taken on the same Redis in the same run,
// alternating the two: `redis-benchmark -t lpop` at the same concurrency (benchConns), or
// another command of the table server. Their metrics are ratios; ns/op means nothing here.

// redisRounds is how many times a benchmark alternates the table server and its baseline.
const redisRounds = 3

// redisLine is the width of the lines the benchmarks load, as BenchmarkReadFirstKeepVsBareHTTP's.
const redisLine = 20

// redisRig is a redis-server of a benchmark's own.
type redisRig struct {
	redis *redistest.Server
}

func startRedisRig(tb testing.TB) *redisRig {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts a redis-server and loads lists of up to a million lines")
	}
	return &redisRig{redis: redistest.Start(tb)}
}

// server starts a table server on the rig's Redis, as the sts command does with --redis-url
// (key prefix "sts:", the backend metrics hooked): every server of a rig shares the lists.
func (r *redisRig) server(tb testing.TB) *testServer {
	tb.Helper()
	st := redisstoretest.Open(tb, r.redis.URL(), redisstore.Options{})
	cfg := testConfig(tb)
	log := &testutil.Buffer{}
	srv, err := NewServer(cfg, st, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	st.Observe(srv.Metrics().ObserveBackend, srv.Metrics().CountBackendDial)
	ts := &testServer{srv: srv, store: st, dir: cfg.DatasetDir, cfg: cfg, log: log}
	ts.listen(tb)
	return ts
}

// redisLines returns n lines of redisLine characters: prefix, then the line's number in zeros.
func redisLines(prefix string, from, n int) []string {
	lines := make([]string, n)
	format := prefix + "%0" + strconv.Itoa(redisLine-len(prefix)) + "d"
	for i := range lines {
		lines[i] = fmt.Sprintf(format, from+i)
	}
	return lines
}

// redisLoad makes list name hold lines, through the table server's store.
func redisLoad(tb testing.TB, ts *testServer, name string, lines []string) {
	tb.Helper()
	if err := ts.store.Replace(context.Background(), name, lines, ""); err != nil {
		tb.Fatalf("loading %d lines into %s: %v", len(lines), name, err)
	}
}

// redisLoadRate sends n GETs over benchConns keep-alive connections and returns the throughput:
// connection c sends its requests to target(c, i), i counting the requests of all connections.
// Every answer must be 200 with a body of wantLen bytes; got, when not nil, is given each body.
func redisLoadRate(b *testing.B, client *http.Client, n, wantLen int, target func(conn int, i int64) string, got func(body []byte)) float64 {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for c := range benchConns {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				url := target(c, i)
				resp, err := client.Get(url)
				if err != nil {
					failed.Store(err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || len(body) != wantLen {
					failed.Store(fmt.Errorf("%s: answer %d %q (%v), want %d bytes", url, resp.StatusCode, body, err, wantLen))
					return
				}
				if got != nil {
					got(body)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// redisMillion is the size of the long lists.
const redisMillion = 1_000_000

// redisLists loads each list a benchmark's sub-benchmarks need once, when the first of them asks,
// so that any of them can run alone.
type redisLists struct {
	ts     *testServer
	loaded map[string]bool
}

func (l *redisLists) need(b *testing.B, name string, lines func() []string) {
	b.Helper()
	if !l.loaded[name] {
		redisLoad(b, l.ts, name, lines())
		l.loaded[name] = true
	}
}

// BenchmarkRedisVsRedisBenchmark measures commands of a table server on Redis over benchConns
// keep-alive connections against `redis-benchmark -t lpop` with as many clients on the same
// redis-server, alternating the two redisRounds times. Metrics: "x-redis-benchmark", the table
// server's requests per second over redis-benchmark's (READ FIRST KEEP=FALSE: target ≥ 0.5);
// "redis-cpu-us/req", the Redis CPU time one table-server request costs, beside
// "redis-cpu-us/lpop", one LPOP's. The Go HTTP client that makes the load shares the machine with
// the server and Redis, where redis-benchmark is a lean C client: "bare-x-redis-benchmark", a bare
// net/http handler's rate over redis-benchmark's, is the most the table server could reach.
func BenchmarkRedisVsRedisBenchmark(b *testing.B) {
	rig := startRedisRig(b)
	ts := rig.server(b)
	l := &redisLists{ts: ts, loaded: map[string]bool{}}
	client := keepAliveClient(benchConns)
	lineBody := len(okBody(strings.Repeat("0", redisLine)))
	const lpops = 20_000 // per round: about a second of redis-benchmark on 2 shared cores

	// compare alternates redis-benchmark with the table server's load of n requests, run by
	// sts, which returns its rate; it returns the mean rates of both.
	compare := func(b *testing.B, n int, sts func(n int) float64) (stsMean, lpopMean float64) {
		b.Helper()
		b.ResetTimer()
		var stsRate, lpopRate, stsCPU, lpopCPU float64
		for range redisRounds {
			rate, cpu := rig.redis.Costs(b, func() float64 { return rig.redis.BenchmarkLPOP(b, benchConns, lpops) })
			lpopRate, lpopCPU = lpopRate+rate, lpopCPU+cpu
			rate, cpu = rig.redis.Costs(b, func() float64 { return sts(n) })
			stsRate, stsCPU = stsRate+rate, stsCPU+cpu
		}
		b.StopTimer()
		b.ReportMetric(stsRate/redisRounds, "sts-req/s")
		b.ReportMetric(lpopRate/redisRounds, "redis-benchmark-req/s")
		b.ReportMetric(stsRate/lpopRate, "x-redis-benchmark")
		b.ReportMetric(stsCPU/float64(redisRounds*n)*1e6, "redis-cpu-us/req")
		b.ReportMetric(lpopCPU/float64(redisRounds*lpops)*1e6, "redis-cpu-us/lpop")
		return stsRate / redisRounds, lpopRate / redisRounds
	}
	get := func(b *testing.B, target string) func(n int) float64 {
		return func(n int) float64 { return requestsPerSecond(b, client, ts.base+target, n, lineBody) }
	}

	b.Run("ReadFirstKeepFalse", func(b *testing.B) {
		// Also against BenchmarkReadFirstKeepVsBareHTTP's baseline, a bare net/http handler
		// answering as many bytes, in the same rounds: metric "x-bare-http".
		n := max(b.N, 5000)
		redisLoad(b, ts, "drain", redisLines("", 0, redisRounds*n+1000))
		bare := startBare(b, []byte(strings.Repeat("b", lineBody)))
		var bareRate float64
		read := get(b, "/sts/READ?FILENAME=drain&READ_MODE=FIRST&KEEP=FALSE")
		stsRate, lpopRate := compare(b, n, func(n int) float64 {
			bareRate += requestsPerSecond(b, client, bare+"/", n, lineBody)
			return read(n)
		})
		bareRate /= redisRounds
		b.ReportMetric(bareRate, "bare-req/s")
		b.ReportMetric(stsRate/bareRate, "x-bare-http")
		b.ReportMetric(bareRate/lpopRate, "bare-x-redis-benchmark")
	})
	// A list of a million lines, for the reads that keep its size about the same.
	millionLines := func() []string { return redisLines("", 0, redisMillion) }
	b.Run("ReadFirstKeepTrue1M", func(b *testing.B) {
		l.need(b, "million", millionLines)
		compare(b, max(b.N, 5000), get(b, "/sts/READ?FILENAME=million&READ_MODE=FIRST&KEEP=TRUE"))
	})
	b.Run("ReadRandomKeepFalse1M", func(b *testing.B) {
		l.need(b, "million", millionLines)
		compare(b, max(b.N, 200), get(b, "/sts/READ?FILENAME=million&READ_MODE=RANDOM&KEEP=FALSE"))
	})
	b.Run("AddUnique10k", func(b *testing.B) {
		n := max(b.N, 5000)
		redisLoad(b, ts, "unique", redisLines("", 0, 10_000))
		// The first UNIQUE ADD indexes the list's lines (metric "first-add-ms"), before the clock
		// runs; then each ADD is one line new to the list.
		start := time.Now()
		ts.expect(b, "/sts/ADD?FILENAME=unique&UNIQUE=TRUE&LINE=first", okBody(""))
		first := time.Since(start)
		var added atomic.Int64
		compare(b, n, func(n int) float64 {
			return redisLoadRate(b, client, n, len(okBody("")), func(int, int64) string {
				return ts.base + "/sts/ADD?FILENAME=unique&ADD_MODE=LAST&UNIQUE=TRUE&LINE=" + redisLines("u", int(added.Add(1)), 1)[0]
			}, nil)
		})
		b.ReportMetric(float64(first.Microseconds())/1e3, "first-add-ms")
	})
	b.Run("FirstAddUnique1M", func(b *testing.B) {
		// The first UNIQUE ADD on a list of a million lines (metric "first-add-ms", aim ≤ 50):
		// it looks for its line through the list in steps of bounded scripts, the index's build
		// going on after it answered (TestNoCommandBlocksRedis checks the steps' bound).
		var took time.Duration
		for range b.N {
			redisLoad(b, ts, "unique1m", redisLines("", 0, redisMillion))
			start := time.Now()
			ts.expect(b, "/sts/ADD?FILENAME=unique1m&UNIQUE=TRUE&LINE=first", okBody(""))
			took += time.Since(start)
			ts.expect(b, "/sts/RESET?FILENAME=unique1m", okBody(""))
		}
		b.ReportMetric(float64(took.Microseconds())/1e3/float64(b.N), "first-add-ms")
	})
	// One million-line list for both FINDs: ten lines with neither "x" nor "y", then lines with
	// "x", and the last line alone with "y". KEEP=TRUE puts each hit back at the end, so the
	// "x" FIND always hits the 11th line, and the "y" FIND scans to the end (a few lines less
	// once the "x" FIND has moved its hits behind it).
	find := func() []string {
		return append(append(redisLines("", 0, 10), redisLines("x", 10, redisMillion-11)...), redisLines("y", redisMillion, 1)...)
	}
	b.Run("FindFront1M", func(b *testing.B) {
		// Metric "distinct/req": the share of answers that are different lines. Each FIND takes
		// the first hit that was there when it ran, which KEEP=TRUE moves to the end, so with the
		// memory backend all are different (1); below 1, concurrent FINDs answered the same line.
		l.need(b, "find", find)
		var mu sync.Mutex
		answers := map[string]bool{}
		n := max(b.N, 128)
		compare(b, n, func(n int) float64 {
			return redisLoadRate(b, client, n, lineBody, func(int, int64) string {
				return ts.base + "/sts/FIND?FILENAME=find&LINE=x&FIND_MODE=SUBSTRING&KEEP=TRUE"
			}, func(body []byte) {
				mu.Lock()
				answers[string(body)] = true
				mu.Unlock()
			})
		})
		b.ReportMetric(float64(len(answers))/float64(redisRounds*n), "distinct/req")
	})
	b.Run("FindEnd1M", func(b *testing.B) {
		l.need(b, "find", find)
		compare(b, max(b.N, 8), get(b, "/sts/FIND?FILENAME=find&LINE=y&FIND_MODE=SUBSTRING&KEEP=TRUE"))
	})
}

// BenchmarkRedisReadRandomVsFirst compares READ RANDOM with READ FIRST (both KEEP=TRUE, so the
// list keeps its size) on Redis, on lists of 10 000 and 1 000 000 lines, over benchConns
// keep-alive connections, alternating the two redisRounds times. A RANDOM read overwrites its
// line with a tombstone that LREM removes from the nearer end: its cost grows with the list.
// The metric "ratio" is RANDOM's throughput over FIRST's.
func BenchmarkRedisReadRandomVsFirst(b *testing.B) {
	rig := startRedisRig(b)
	ts := rig.server(b)
	client := keepAliveClient(benchConns)
	lineBody := len(okBody(strings.Repeat("0", redisLine)))
	for _, size := range []struct {
		name          string
		lines, random int // random: READ RANDOM requests per round
	}{{"10k", 10_000, 2000}, {"1M", redisMillion, 150}} {
		b.Run(size.name, func(b *testing.B) {
			redisLoad(b, ts, size.name, redisLines("", 0, size.lines))
			first, random := max(b.N, 5000), max(b.N, size.random)
			b.ResetTimer()
			var firstRate, randomRate, firstCPU, randomCPU float64
			for range redisRounds {
				rate, cpu := rig.redis.Costs(b, func() float64 {
					return requestsPerSecond(b, client, ts.base+"/sts/READ?FILENAME="+size.name+"&READ_MODE=FIRST&KEEP=TRUE", first, lineBody)
				})
				firstRate, firstCPU = firstRate+rate, firstCPU+cpu
				rate, cpu = rig.redis.Costs(b, func() float64 {
					return requestsPerSecond(b, client, ts.base+"/sts/READ?FILENAME="+size.name+"&READ_MODE=RANDOM&KEEP=TRUE", random, lineBody)
				})
				randomRate, randomCPU = randomRate+rate, randomCPU+cpu
			}
			b.StopTimer()
			b.ReportMetric(firstRate/redisRounds, "first-req/s")
			b.ReportMetric(randomRate/redisRounds, "random-req/s")
			b.ReportMetric(randomRate/firstRate, "ratio")
			b.ReportMetric(firstCPU/float64(redisRounds*first)*1e6, "first-redis-cpu-us/req")
			b.ReportMetric(randomCPU/float64(redisRounds*random)*1e6, "random-redis-cpu-us/req")
		})
	}
}

// BenchmarkRedisServers spreads READ FIRST KEEP=FALSE over benchConns keep-alive connections
// across 1, 2 and 3 table servers sharing one Redis (in this process, each with its own
// connections to Redis, as separate processes would have), alternating the three redisRounds
// times. Metrics, for k servers: "k-servers-req/s", the total throughput; "k-servers-redis-cpu-%",
// the share of one core the redis-server used meanwhile (100: Redis is the bottleneck);
// "x-1-server" for 2 and 3, the throughput over one server's.
func BenchmarkRedisServers(b *testing.B) {
	rig := startRedisRig(b)
	servers := []*testServer{rig.server(b), rig.server(b), rig.server(b)}
	client := keepAliveClient(benchConns)
	lineBody := len(okBody(strings.Repeat("0", redisLine)))
	n := max(b.N, 5000)
	redisLoad(b, servers[0], "drain", redisLines("", 0, redisRounds*len(servers)*n+1000))
	var rate, cpu [3]float64
	b.ResetTimer()
	for range redisRounds {
		for k := range servers {
			start := time.Now()
			r, c := rig.redis.Costs(b, func() float64 {
				return redisLoadRate(b, client, n, lineBody, func(conn int, _ int64) string {
					return servers[conn%(k+1)].base + "/sts/READ?FILENAME=drain&READ_MODE=FIRST&KEEP=FALSE"
				}, nil)
			})
			rate[k] += r
			cpu[k] += c / time.Since(start).Seconds()
		}
	}
	b.StopTimer()
	for k := range servers {
		name := strconv.Itoa(k+1) + "-servers"
		if k == 0 {
			name = "1-server"
		}
		b.ReportMetric(rate[k]/redisRounds, name+"-req/s")
		b.ReportMetric(cpu[k]/redisRounds*100, name+"-redis-cpu-%")
		if k > 0 {
			b.ReportMetric(rate[k]/rate[0], name+"-x-1-server")
		}
	}
}
