package sts

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// BenchmarkRedisReadFirstVsLPOPHandler measures READ FIRST KEEP=FALSE on Redis against its
// ceiling: a bare net/http handler that pops one line of a plain LIST per request with one LPOP,
// through the client the Redis backend uses, with the same settings (Connection.Client, then
// AutoPipeline), and answers the same bytes. Both run over benchConns keep-alive connections,
// beside `redis-benchmark -t lpop` on the same Redis and READ FIRST on the memory backend, in
// ceilingRounds rounds. Metrics: "x-lpop-http", the table server's rate over the ceiling's (aim
// ≥ 0.85); "x-redis-benchmark"; and the allocations per request of each ("sts-allocs/req",
// "lpop-http-allocs/req", "memory-allocs/req") and this process's CPU time per request, in µs
// ("sts-cpu-us/req", "lpop-http-cpu-us/req", "memory-cpu-us/req"), which count the load
// generator's too, the same for all three: their differences are the servers'; Redis' CPU time
// per request of the two Redis servers ("sts-redis-cpu-us/req", "lpop-http-redis-cpu-us/req"),
// which shares the machine's cores with this process; the requests each of the two Redis servers
// answered per read Redis made of its connections ("sts-req/redis-read",
// "lpop-http-req/redis-read"), which counts the other work of the servers meanwhile too (their
// health checks, the table server's loops), a few reads a second; and the READs of a script
// ("sts-reads/script"). What a round trip costs Redis: redistest.BenchmarkRoundTrip.
func BenchmarkRedisReadFirstVsLPOPHandler(b *testing.B) {
	rig := startRedisRig(b)
	ts := rig.server(b)
	mem := memoryServer(b)
	client := keepAliveClient(benchConns)
	lineBody := len(okBody(strings.Repeat("0", redisLine)))
	n := max(b.N, ceilingRequests)
	lines := redisLines("", 0, ceilingRounds*n+1000)
	redisLoad(b, ts, "drain", lines)
	if err := mem.store.Replace(context.Background(), "drain", redisLines("", 0, ceilingRounds*n+1000), ""); err != nil {
		b.Fatal(err)
	}
	const read = "/sts/READ?FILENAME=drain&READ_MODE=FIRST&KEEP=FALSE"
	var stsCosts, lpopCosts, memCosts requestCosts
	var bench, stsRedisCPU, lpopRedisCPU, stsReads, lpopReads, stsScripts float64
	servers := []struct {
		url                           string
		costs                         *requestCosts
		redisCPU, redisReads, scripts *float64 // nil: not counted
	}{
		{startLPOPHandler(b, ts, rig.redis.URL(), "plain", lines), &lpopCosts, &lpopRedisCPU, &lpopReads, nil},
		{ts.base + read, &stsCosts, &stsRedisCPU, &stsReads, &stsScripts},
		{mem.base + read, &memCosts, nil, nil, nil},
	}
	const lpops = 20_000
	b.ResetTimer()
	for round := range ceilingRounds {
		bench += rig.redis.BenchmarkLPOP(b, benchConns, lpops)
		for i := range servers {
			s := servers[(round+i)%len(servers)]
			if s.scripts != nil {
				rig.redis.CommandStats(b) // resets INFO stats' counts too: read Reads after
			}
			redisReads := rig.redis.Reads(b)
			var costs requestCosts
			_, redisCPU := rig.redis.Costs(b, func() float64 {
				costs = measureRequests(func() float64 { return requestsPerSecond(b, client, s.url, n, lineBody) }, n)
				return costs.rate
			})
			s.costs.add(costs)
			if s.redisCPU != nil {
				*s.redisCPU += redisCPU / float64(n) * 1e6
				*s.redisReads += rig.redis.Reads(b) - redisReads
			}
			if s.scripts != nil {
				*s.scripts += float64(rig.redis.CommandStats(b)["evalsha"].Calls)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(stsCosts.rate/ceilingRounds, "sts-req/s")
	b.ReportMetric(lpopCosts.rate/ceilingRounds, "lpop-http-req/s")
	b.ReportMetric(stsCosts.rate/lpopCosts.rate, "x-lpop-http")
	b.ReportMetric(stsCosts.rate/bench, "x-redis-benchmark")
	b.ReportMetric(lpopCosts.rate/bench, "lpop-http-x-redis-benchmark")
	b.ReportMetric(memCosts.rate/ceilingRounds, "memory-req/s")
	for _, c := range []struct {
		name  string
		costs requestCosts
	}{{"sts", stsCosts}, {"lpop-http", lpopCosts}, {"memory", memCosts}} {
		b.ReportMetric(c.costs.allocs/ceilingRounds, c.name+"-allocs/req")
		b.ReportMetric(c.costs.cpu/ceilingRounds, c.name+"-cpu-us/req")
	}
	b.ReportMetric(stsRedisCPU/ceilingRounds, "sts-redis-cpu-us/req")
	b.ReportMetric(lpopRedisCPU/ceilingRounds, "lpop-http-redis-cpu-us/req")
	b.ReportMetric(ceilingRounds*float64(n)/stsReads, "sts-req/redis-read")
	b.ReportMetric(ceilingRounds*float64(n)/lpopReads, "lpop-http-req/redis-read")
	b.ReportMetric(ceilingRounds*float64(n)/stsScripts, "sts-reads/script")
}

// A round of BenchmarkRedisReadFirstVsLPOPHandler runs ceilingRequests requests (or b.N) on each
// server, half a second or more: on a machine whose speed swings from one moment to the next,
// shorter runs measured the swings more than the servers. Each round starts with the next server,
// so that none always runs after the same one.
const (
	ceilingRounds   = 6
	ceilingRequests = 20_000
)

// TestLPOPHandlerAnswersAsReadDoes keeps the ceiling of BenchmarkRedisReadFirstVsLPOPHandler
// honest: its answer to a request is READ's, the same status, headers (but Date) and body, so
// that the benchmark's clients read as much from both.
func TestLPOPHandlerAnswersAsReadDoes(t *testing.T) {
	rig := startRedisRig(t)
	ts := rig.server(t)
	lines := redisLines("", 0, 2)
	redisLoad(t, ts, "drain", lines)
	ceiling := startLPOPHandler(t, ts, rig.redis.URL(), "plain", lines)
	const request = " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	read := raw(t, ts.addr, "GET /sts/READ?FILENAME=drain&READ_MODE=FIRST&KEEP=FALSE"+request)
	lpop := raw(t, strings.TrimSuffix(strings.TrimPrefix(ceiling, "http://"), "/"), "GET /"+request)
	for _, a := range []*answer{&read, &lpop} {
		a.header.Del("Date")
	}
	if read.status != lpop.status || read.body != lpop.body || !reflect.DeepEqual(read.header, lpop.header) {
		t.Errorf("the ceiling answers %d %v %q, READ %d %v %q", lpop.status, lpop.header, lpop.body, read.status, read.header, read.body)
	}
}

// requestCosts is what a run of requests achieved and cost this process: their rate, and per
// request its heap allocations and CPU time (µs, all its threads).
type requestCosts struct{ rate, allocs, cpu float64 }

func (c *requestCosts) add(o requestCosts) {
	c.rate, c.allocs, c.cpu = c.rate+o.rate, c.allocs+o.allocs, c.cpu+o.cpu
}

// measureRequests runs load, which makes n requests and returns their rate, and returns what
// they cost.
func measureRequests(load func() float64, n int) requestCosts {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := processCPU()
	rate := load()
	cpu = processCPU() - cpu
	runtime.ReadMemStats(&after)
	return requestCosts{rate: rate, allocs: float64(after.Mallocs-before.Mallocs) / float64(n), cpu: cpu / float64(n) * 1e6}
}

// processCPU is the CPU time this process has used so far, user and system, in seconds.
func processCPU() float64 {
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

// memoryServer starts a table server on the memory backend, whatever STS_TEST_BACKEND says.
func memoryServer(b *testing.B) *testServer {
	b.Helper()
	cfg := testConfig(b)
	mem := memory.New(memory.WithLimits(cfg.Limits))
	srv, err := NewServer(cfg, mem, slog.New(slog.NewTextHandler(&testutil.Buffer{}, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ts := &testServer{srv: srv, store: mem, mem: mem, dir: cfg.DatasetDir, cfg: cfg}
	ts.listen(b)
	return ts
}

// startLPOPHandler fills the plain LIST key with lines and serves, from a bare net/http handler,
// one LPOP of it per request, answered as READ answers a line (its headers and body written as
// ts's handler and writer write them, TestLPOPHandlerAnswersAsReadDoes): the ceiling of READ
// FIRST on Redis. Its client is the Redis backend's, with the same settings.
func startLPOPHandler(tb testing.TB, ts *testServer, url, key string, lines []string) string {
	tb.Helper()
	conn, err := redisstore.Connection{URL: url}.Client()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	ctx := context.Background()
	for i := 0; i < len(lines); i += 1000 {
		part := lines[i:min(i+1000, len(lines))]
		values := make([]any, len(part))
		for j, line := range part {
			values[j] = line
		}
		if err := conn.RPush(ctx, key, values...).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	pipelined, err := conn.AutoPipeline()
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line, err := pipelined.LPop(r.Context(), key).Result()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header()["X-Content-Type-Options"] = noSniff
		ts.srv.writeHTML(w, http.StatusOK, []byte(testutil.OKBody(line)))
	})}
	go func() { _ = hs.Serve(ln) }()
	tb.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/"
}
