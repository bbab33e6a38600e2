package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// startShared starts n sts processes on one Redis, all together, each loading the same files;
// it returns once all are ready.
func startShared(t *testing.T, n int, redisURL string, args ...string) []*stsproc.Process {
	t.Helper()
	servers := make([]*stsproc.Process, n)
	for i := range servers {
		servers[i] = launch(t, stsproc.FreePort(t), append([]string{"--redis-url", redisURL, "--log-format", "json"}, args...)...)
	}
	for _, p := range servers {
		p.WaitReady(t)
	}
	return servers
}

// Three servers on one Redis: started together on the same file, they load it once; 64 clients
// consume it through all three with FIRST, LAST, RANDOM and FIND while producers ADD through all
// three, UNIQUE included: no line is served twice and none is lost; UNIQUE holds across servers;
// a read waiting on one server is woken by an ADD through another.
func TestThreeServersShareRedis(t *testing.T) {
	const lines = 20000
	srv := redistest.Start(t)
	dir := t.TempDir()
	var content strings.Builder
	for i := range lines {
		fmt.Fprintf(&content, "line-%05d\n", i)
	}
	path := filepath.Join(dir, "data.csv")
	if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := startShared(t, 3, srv.URL(), "--load", "data="+path)

	loaded := 0
	for _, p := range servers {
		loaded += strings.Count(p.Logs.String(), `"msg":"Loaded list","list":"data"`)
	}
	if loaded != 1 {
		t.Fatalf("the dataset was loaded %d times by three servers starting together, want once", loaded)
	}

	// A waiting read on the first server, woken by an ADD through the third.
	woken := make(chan string, 1)
	go func() {
		c := &rawClient{addr: strings.TrimPrefix(servers[0].Base, "http://")}
		_, body, _, _ := c.get("/sts/READ?FILENAME=queue&KEEP=FALSE&WAIT=20000")
		woken <- body
	}()
	// The ADD must come while the read waits, or it would test no wake-up.
	testutil.Until(t, 10*time.Second, 5*time.Millisecond, "the read waiting on server 1", func() bool {
		_, metrics := httpGet(servers[0].Base + "/metrics")
		return strings.Contains(metrics, "\nsts_waiting_reads 1\n")
	})
	added := time.Now()
	c := &rawClient{addr: strings.TrimPrefix(servers[2].Base, "http://")}
	if _, body, _, err := c.get("/sts/ADD?FILENAME=queue&LINE=wake"); err != nil || !strings.Contains(body, "OK") {
		t.Fatalf("ADD through the third server: %q, %v", body, err)
	}
	select {
	case body := <-woken:
		if !strings.Contains(body, "<body>wake</body>") {
			t.Fatalf("the waiting read got %q", body)
		}
		t.Logf("a read waiting on server 1 got the ADD made through server 3 after %v", time.Since(added).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the read waiting on server 1 was not woken by the ADD through server 3")
	}

	var (
		mu       sync.Mutex
		served   = map[string]int{}
		produced = map[string]bool{}
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// Producers add new lines to the consumed list through every server. Each also offers a line
	// to a list nobody consumes through two different servers with UNIQUE=TRUE, as its twin
	// producer does: exactly one of the four offers of a line may be accepted.
	var producing sync.WaitGroup
	var accepted, refused atomic.Int64
	for p := range 6 {
		producing.Add(1)
		go func() {
			defer producing.Done()
			clients := []*rawClient{
				{addr: strings.TrimPrefix(servers[p%3].Base, "http://")},
				{addr: strings.TrimPrefix(servers[(p+1)%3].Base, "http://")},
			}
			for i := range 300 {
				line := fmt.Sprintf("new-%d-%03d", p, i)
				if _, body, _, err := clients[i%2].get("/sts/ADD?FILENAME=data&ADD_MODE=LAST&LINE=" + line); err != nil || !strings.Contains(body, "OK") {
					fail("ADD %s: %q, %v", line, body, err)
					return
				}
				mu.Lock()
				produced[line] = true
				mu.Unlock()
				unique := fmt.Sprintf("u-%d-%03d", p/2, i) // producers 2k and 2k+1 offer the same lines
				for _, c := range clients {
					_, body, _, err := c.get("/sts/ADD?FILENAME=uniq&UNIQUE=TRUE&LINE=" + unique)
					switch {
					case err != nil:
						fail("ADD %s: %v", unique, err)
					case strings.Contains(body, "OK"):
						accepted.Add(1)
					case strings.Contains(body, "ENTRY already exists"):
						refused.Add(1)
					default:
						fail("ADD %s: %q", unique, body)
					}
				}
			}
		}()
	}
	// Consumers read through every server until the list stays empty after the producers end.
	var producersDone atomic.Bool
	go func() { producing.Wait(); producersDone.Store(true) }()
	targets := []string{
		"/sts/READ?FILENAME=data&KEEP=FALSE&READ_MODE=FIRST",
		"/sts/READ?FILENAME=data&KEEP=FALSE&READ_MODE=LAST",
		"/sts/READ?FILENAME=data&KEEP=FALSE&READ_MODE=RANDOM",
		"/sts/FIND?FILENAME=data&KEEP=FALSE&FIND_MODE=SUBSTRING&LINE=-",
	}
	var consuming sync.WaitGroup
	for i := range 64 {
		consuming.Add(1)
		go func() {
			defer consuming.Done()
			c := &rawClient{addr: strings.TrimPrefix(servers[i%3].Base, "http://")}
			target := targets[i%len(targets)]
			for {
				done := producersDone.Load()
				_, body, _, err := c.get(target)
				if err != nil {
					fail("%s: %v", target, err)
					return
				}
				if strings.Contains(body, "No more line") || strings.Contains(body, "Not find") {
					if done {
						return
					}
					continue
				}
				line, ok := strings.CutPrefix(body, "<html><title>OK</title>\n<body>")
				if !ok {
					fail("%s: %q", target, body)
					return
				}
				line = strings.TrimSuffix(line, "</body>\n</html>")
				mu.Lock()
				served[line]++
				mu.Unlock()
			}
		}()
	}
	consuming.Wait()
	if len(failures) > 0 {
		t.Fatalf("failures:\n%s", strings.Join(failures, "\n"))
	}
	for line, n := range served {
		if n > 1 {
			t.Errorf("%s was served %d times", line, n)
		}
	}
	remaining := servers[1].Export(t, "data")
	want := lines + len(produced)
	if len(served)+len(remaining) != want {
		t.Errorf("%d lines served + %d remaining, want %d (%d loaded + %d added)", len(served), len(remaining), want, lines, len(produced))
	}
	for i := range lines {
		if line := fmt.Sprintf("line-%05d", i); served[line] == 0 && !contains(remaining, line) {
			t.Errorf("%s was lost", line)
			break
		}
	}
	if accepted.Load() != 900 || refused.Load() != 2700 {
		t.Errorf("UNIQUE across servers: %d accepted, %d refused; want 900 and 2700", accepted.Load(), refused.Load())
	}
	if n := len(servers[0].Export(t, "uniq")); n != 900 {
		t.Errorf("the unique list holds %d lines, want 900", n)
	}
	t.Logf("%d lines served once each through three servers, %d remaining; %d UNIQUE adds accepted, %d refused", len(served), len(remaining), accepted.Load(), refused.Load())
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}

// A Sentinel failover under load: two servers consume and add while the master is SIGKILLed, the
// replica takes over, and the old master comes back as its replica. Both servers acknowledge
// reads and adds before the failover and again after it. With --redis-min-replicas 1
// a change is acknowledged only once the replica holds it, so no acknowledged ADD is lost and no
// line whose READ was acknowledged is served again; a READ answered 503 may have taken its line
// with it. Without it, what the failover cost is measured and logged.
func TestSentinelFailover(t *testing.T) {
	for _, tc := range []struct {
		name        string
		minReplicas bool
	}{{"min-replicas-1", true}, {"no-min-replicas", false}} {
		t.Run(tc.name, func(t *testing.T) {
			const lines = 20000
			st := redistest.StartSentinel(t, "sts")
			path := filepath.Join(t.TempDir(), "data.csv")
			var content strings.Builder
			for i := range lines {
				fmt.Fprintf(&content, "line-%05d\n", i)
			}
			if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--redis-sentinel-master", "sts", "--redis-sentinel-addrs", strings.Join(st.Addrs(), ","), "--load", "data=" + path}
			if tc.minReplicas {
				args = append(args, "--redis-min-replicas", "1", "--redis-min-replicas-timeout", "500ms")
			}
			servers := startShared(t, 2, "redis://"+st.Master.Addr, args...)

			// The phases of the run, for the acknowledged requests each server answered in each.
			const (
				before = iota
				during // from the SIGKILL until both servers are ready again
				after
			)
			var (
				mu             sync.Mutex
				served         = map[string]int{}
				added          = map[string]bool{}
				unacknowledged atomic.Int64 // requests answered 503 or not at all: their change may or may not have been made
				phase          atomic.Int32
				reads, adds    [3][2]atomic.Int64 // acknowledged, by phase and server
				stop           atomic.Bool
				work           sync.WaitGroup
			)
			for i := range 16 {
				work.Add(1)
				go func() {
					defer work.Done()
					c := &rawClient{addr: strings.TrimPrefix(servers[i%2].Base, "http://")}
					for n := 0; !stop.Load(); n++ {
						target, line := "/sts/READ?FILENAME=data&KEEP=FALSE", ""
						if i%4 == 0 || i%4 == 1 { // a producer, two on each server
							line = fmt.Sprintf("new-%d-%d", i, n)
							target = "/sts/ADD?FILENAME=data&ADD_MODE=LAST&LINE=" + line
						}
						p := phase.Load() // the phase the request was sent in
						status, body, _, err := c.get(target)
						switch {
						case err != nil || status != 200 || strings.Contains(body, "KO"):
							unacknowledged.Add(1)
							time.Sleep(50 * time.Millisecond) // a client's back-off
						case line != "":
							adds[p][i%2].Add(1)
							mu.Lock()
							added[line] = true
							mu.Unlock()
						case strings.Contains(body, "<body>"):
							reads[p][i%2].Add(1)
							got := strings.TrimSuffix(strings.TrimPrefix(body, "<html><title>OK</title>\n<body>"), "</body>\n</html>")
							mu.Lock()
							served[got]++
							mu.Unlock()
						}
					}
				}()
			}
			// acknowledged waits until each server has acknowledged reads and adds in phase p:
			// the failover must find load running, and leave both servers serving it.
			acknowledged := func(p int, what string) {
				t.Helper()
				testutil.Until(t, 30*time.Second, 10*time.Millisecond, what, func() bool {
					for s := range 2 {
						if reads[p][s].Load() < 20 || adds[p][s].Load() < 20 {
							return false
						}
					}
					return true
				})
			}
			acknowledged(before, "reads and adds acknowledged by both servers before the failover")
			phase.Store(during)
			st.Master.Kill()
			killed := time.Now()
			for st.CurrentMaster(t) != st.Replica.Addr {
				if time.Since(killed) > 30*time.Second {
					t.Fatal("no failover within 30 s")
				}
				time.Sleep(100 * time.Millisecond)
			}
			failedOver := time.Since(killed)
			st.Master.Restart(t) // comes back as the new master's replica (the sentinels see to it)
			recovered := time.Now()
			for servers[0].Status("/readyz") != 200 || servers[1].Status("/readyz") != 200 {
				if time.Since(recovered) > 30*time.Second {
					t.Fatal("the servers were not ready again within 30 s of the failover")
				}
				time.Sleep(100 * time.Millisecond)
			}
			phase.Store(after)
			acknowledged(after, "reads and adds acknowledged by both servers after the failover")
			stop.Store(true)
			work.Wait()

			remaining := servers[0].Export(t, "data")
			present := map[string]int{}
			for _, l := range remaining {
				present[l]++
			}
			twice, lostAdds, lostLines := 0, 0, 0
			for line, n := range served {
				if n+present[line] > 1 {
					twice++
				}
			}
			for line := range added {
				if served[line] == 0 && present[line] == 0 {
					lostAdds++
				}
			}
			for i := range lines {
				if line := fmt.Sprintf("line-%05d", i); served[line] == 0 && present[line] == 0 {
					lostLines++
				}
			}
			t.Logf("failover in %v; %d reads acknowledged, %d adds acknowledged (%d and %d after the failover), %d requests unacknowledged; %d acknowledged adds lost, %d lines served twice, %d loaded lines gone unacknowledged",
				failedOver.Round(100*time.Millisecond), len(served), len(added), reads[after][0].Load()+reads[after][1].Load(), adds[after][0].Load()+adds[after][1].Load(),
				unacknowledged.Load(), lostAdds, twice, lostLines)
			if tc.minReplicas {
				if lostAdds > 0 || twice > 0 {
					t.Errorf("with --redis-min-replicas 1: %d acknowledged adds lost, %d lines served twice; want none", lostAdds, twice)
				}
				if int64(lostLines) > unacknowledged.Load() {
					t.Errorf("%d loaded lines gone, more than the %d unacknowledged requests", lostLines, unacknowledged.Load())
				}
			}
		})
	}
}

// A lease taken through a server on Redis outlives that server: after a SIGKILL, the other
// server acknowledges it by its id alone, and a lease dropped with the dead server expires
// through the other, waking a read waiting there, and its line is served once.
func TestLeasesOutliveTheirServerOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	servers := startShared(t, 2, srv.URL())
	first := &rawClient{addr: strings.TrimPrefix(servers[0].Base, "http://")}
	second := &rawClient{addr: strings.TrimPrefix(servers[1].Base, "http://")}
	get := func(c *rawClient, target string) (int, string) {
		t.Helper()
		status, body, _, err := c.get(target)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		return status, body
	}
	if _, body := get(first, "/sts/ADD?FILENAME=q&ADD_MODE=LAST&LINE=acked"); body != testutil.OKBody("") {
		t.Fatalf("ADD: %q", body)
	}
	get(first, "/sts/ADD?FILENAME=q&ADD_MODE=LAST&LINE=dropped")
	if _, body := get(first, "/sts/READ?FILENAME=q&KEEP=FALSE&LEASE=60000"); body != testutil.OKBody("acked") {
		t.Fatalf("READ with a lease: %q", body)
	}
	ackLater := first.header.Get("X-STS-Lease")
	if _, body := get(first, "/sts/READ?FILENAME=q&KEEP=FALSE&LEASE=1500"); body != testutil.OKBody("dropped") {
		t.Fatalf("READ with a lease: %q", body)
	}
	servers[0].Signal(t, syscall.SIGKILL)
	<-servers[0].Exited()

	if status, body := get(second, "/sts/ACK?LEASE="+ackLater); status != http.StatusOK || body != testutil.OKBody("") {
		t.Fatalf("ACK through the other server: %d %q", status, body)
	}
	started := time.Now()
	if _, body := get(second, "/sts/READ?FILENAME=q&KEEP=FALSE&WAIT=20000"); body != testutil.OKBody("dropped") {
		t.Fatalf("the waiting read got %q, want the line of the expired lease", body)
	}
	t.Logf("the dead server's lease expired through the other one; the waiting read got its line after %v", time.Since(started).Round(time.Millisecond))
	if _, body := get(second, "/sts/READ?FILENAME=q&KEEP=FALSE"); body != testutil.KOBody("No more line !") {
		t.Fatalf("after the expiry the list holds %q, want nothing", body)
	}
}
