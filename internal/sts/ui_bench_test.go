package sts

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// renderListPage times GET /ui/lists/l?offset=500000 on a 1 000 000-line list: the page of 100
// lines must cost the page, not the list. It reports ms/page and checks that the list is whole.
func renderListPage(b *testing.B, ts *testServer) {
	b.Helper()
	redisLoad(b, ts, "l", testutil.Numbered("line", 1_000_000))
	client := keepAliveClient(1)
	get := func() {
		resp, err := client.Get(ts.base + "/ui/lists/l?offset=500000")
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "line-500099") || strings.Contains(string(body), "line-500100<") {
			b.Fatalf("the page at 500 000: %d", resp.StatusCode)
		}
	}
	get() // the first answer starts the session
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		get()
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
	b.StopTimer()
	if n, err := ts.store.Length(context.Background(), "l"); err != nil || n != 1_000_000 {
		b.Fatalf("browsing changed the list: %d lines, %v", n, err)
	}
}

// BenchmarkListPageAt500k: the web page's list page at line 500 001 of a million, on memory.
func BenchmarkListPageAt500k(b *testing.B) { renderListPage(b, startServer(b)) }

// BenchmarkListPageAt500kRedis: the same on a redis-server of its own.
func BenchmarkListPageAt500kRedis(b *testing.B) { renderListPage(b, startRedisRig(b).server(b)) }

// BenchmarkReadWhileTenBrowsersWatch compares READ FIRST KEEP=TRUE over 64 keep-alive
// connections with no web page open, and while 10 browsers follow the overview of 1 000 lists by
// Server-Sent Events, in the same run. The metric "ratio" is READ's throughput while they watch
// over its throughput without them (target ≥ 0.9): the overview is sampled once a second for all
// of them.
func BenchmarkReadWhileTenBrowsersWatch(b *testing.B) {
	ts := startServer(b)
	writeLines(b, ts.dir, "l.txt", 10_000, 20)
	ts.expect(b, "/sts/INITFILE?FILENAME=l.txt", okBody("10000"))
	for i := range 1000 {
		redisLoad(b, ts, fmt.Sprintf("list-%04d", i), testutil.Numbered("x", 100))
	}
	bodyLen := len(okBody(strings.Repeat("0", 20)))
	client := keepAliveClient(benchConns)
	read := ts.base + "/sts/READ?FILENAME=l.txt&READ_MODE=FIRST&KEEP=TRUE"
	// A few seconds a run, so that each run spans several of the overview's samples.
	n := max(b.N, 60_000)
	watch := func() (stop func(), events func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := 0
		for range 10 {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.base+"/ui/events", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				lines := bufio.NewScanner(resp.Body)
				lines.Buffer(make([]byte, 1<<20), 1<<20)
				for lines.Scan() {
					if strings.HasPrefix(lines.Text(), "event: view") {
						mu.Lock()
						seen++
						mu.Unlock()
					}
				}
			})
		}
		return func() { cancel(); wg.Wait() }, func() int { mu.Lock(); defer mu.Unlock(); return seen }
	}
	requestsPerSecond(b, client, read, n/4, bodyLen) // warm up: connections, list, caches
	b.ResetTimer()
	var bare, watched float64
	var events int
	watchedRun := func() {
		stop, seen := watch()
		testutil.Until(b, 10*time.Second, 10*time.Millisecond, "10 browsers watching", func() bool { return seen() >= 10 })
		watched += requestsPerSecond(b, client, read, n, bodyLen)
		events += seen()
		stop()
	}
	// Each order once, so that a drift of the shared machine weighs on both alike.
	bare += requestsPerSecond(b, client, read, n, bodyLen)
	watchedRun()
	watchedRun()
	bare += requestsPerSecond(b, client, read, n, bodyLen)
	b.ReportMetric(bare/2, "read/s")
	b.ReportMetric(watched/2, "read/s-watched")
	b.ReportMetric(watched/bare, "ratio")
	if events < 20 {
		b.Fatalf("the browsers got %d events", events)
	}
}
