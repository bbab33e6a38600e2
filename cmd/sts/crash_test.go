package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// generations follows the restarts of a server: clients that lost their connection wait here for
// the next server to be ready.
type generations struct {
	mu    sync.Mutex
	n     int           // the newest server that is ready
	newer chan struct{} // closed when a newer one is
}

func (g *generations) current() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// up says that a new server is ready. Until then current is the last ready one, which a client
// that fails in between has lost, and waits after.
func (g *generations) up() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	close(g.newer)
	g.newer = make(chan struct{})
}

// awaitAfter waits until a server newer than generation n is ready, and reports whether one
// was within timeout.
func (g *generations) awaitAfter(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		g.mu.Lock()
		gen, newer := g.n, g.newer
		g.mu.Unlock()
		if gen > n {
			return true
		}
		select {
		case <-newer:
		case <-deadline:
			return false
		}
	}
}

// call sends target through c until a server answers it or the request is lost with its server:
// it was sent, and the server died before answering. The client then waits for the next server.
func (g *generations) call(c *rawClient, target string) (status int, body string, lost bool, err error) {
	first := time.Now()
	for {
		gen := g.current()
		status, body, sent, err := c.get(target)
		if err == nil && body == testutil.KOBody("Server is starting, retry later !") {
			// A server started after gen, still restoring: the command was not run.
			if !g.awaitAfter(gen, time.Minute) {
				return 0, "", false, fmt.Errorf("%s: a server never became ready", target)
			}
			continue
		}
		if err == nil {
			return status, body, false, nil
		}
		if !g.awaitAfter(gen, time.Minute) {
			return 0, "", false, fmt.Errorf("%s failed on a server that was not killed: %w", target, err)
		}
		if sent {
			return 0, "", true, nil
		}
		if time.Since(first) > 2*time.Minute { // across restarts: a slow machine's whole run may take longer
			return 0, "", false, fmt.Errorf("%s: still failing after 2 minutes: %w", target, err)
		}
	}
}

// numberedInput writes n numbered lines to a file of a fresh directory and returns its path and
// the lines.
func numberedInput(t *testing.T, n int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input.csv")
	lines := testutil.Numbered("line", n)
	if err := os.WriteFile(path, []byte(testutil.File(lines)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, lines
}

// restart SIGKILLs srv, starts a server with the same port and arguments in its place, and
// once it is ready lets the clients waiting in g go on.
func (g *generations) restart(t *testing.T, srv *stsproc.Process, port int, args []string) *stsproc.Process {
	t.Helper()
	srv.Signal(t, syscall.SIGKILL)
	<-srv.Exited()
	srv = launch(t, port, args...)
	srv.WaitReady(t)
	g.up()
	return srv
}

// TestCrashLosesNoAcknowledgedChange drains a 200 000-line list with 32 consumers (READ
// KEEP=FALSE) while producers ADD to another list, and SIGKILLs the server at random moments,
// restarting it on the same state directory each time (fsync policy always, the default). Across
// all runs no line may be acknowledged twice; the lines acknowledged, plus those left, plus at
// most the requests in flight at the kills (one per client per kill, counted here) must be the
// input; every acknowledged ADD must be in the list after the last restart, once.
func TestCrashLosesNoAcknowledgedChange(t *testing.T) {
	const consumers, producers, kills = 32, 4, 5
	lines := 200_000
	if testing.Short() {
		lines = 20_000
	}
	state := t.TempDir()
	input, want := numberedInput(t, lines)
	port := stsproc.FreePort(t)
	// A small snapshot threshold, so that kills also meet snapshots being written.
	args := []string{"--state-dir", state, "--load", "drain=" + input, "--snapshot-bytes", "512Ki", "--log-format", "json"}
	gens := &generations{newer: make(chan struct{})}
	srv := launch(t, port, args...)
	all := []*stsproc.Process{srv}
	srv.WaitReady(t)
	addr := strings.TrimPrefix(srv.Base, "http://")
	started := time.Now()

	var (
		acked         = make([][]string, consumers)
		added         = make([][]string, producers)
		inflightReads atomic.Int64
		inflightAdds  = make([][]string, producers)
		ackedCount    atomic.Int64
		drained       = make(chan struct{})
		failures      = make(chan error, consumers+producers)
	)
	var consumersDone sync.WaitGroup
	for c := range consumers {
		consumersDone.Go(func() {
			client := &rawClient{addr: addr}
			for {
				status, body, lost, err := gens.call(client, "/sts/READ?FILENAME=drain&KEEP=FALSE")
				if err != nil {
					failures <- err
					return
				}
				if lost {
					inflightReads.Add(1)
					continue
				}
				if body == testutil.KOBody("No more line !") {
					return
				}
				line, ok := testutil.OKLine(body)
				if status != http.StatusOK || !ok {
					failures <- fmt.Errorf("READ answered %d %q", status, body)
					return
				}
				acked[c] = append(acked[c], line)
				ackedCount.Add(1)
			}
		})
	}
	var producersDone sync.WaitGroup
	for p := range producers {
		producersDone.Go(func() {
			client := &rawClient{addr: addr}
			for i := 0; ; i++ {
				select {
				case <-drained:
					return
				default:
				}
				line := fmt.Sprintf("p%d-%06d", p, i)
				status, body, lost, err := gens.call(client, "/sts/ADD?FILENAME=adds&ADD_MODE=LAST&LINE="+line)
				if lost { // it may or may not have been added: the next line is another
					inflightAdds[p] = append(inflightAdds[p], line)
					continue
				}
				if err != nil || status != http.StatusOK || body != testutil.OKBody("") {
					failures <- fmt.Errorf("ADD answered %d %q (%v)", status, body, err)
					return
				}
				added[p] = append(added[p], line)
			}
		})
	}

	// Kill when the acknowledged reads pass random points spread over the drain.
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	var points []int64
	for range kills {
		points = append(points, int64(lines/20+r.IntN(lines*17/20)))
	}
	slices.Sort(points)
	consumersFinished := make(chan struct{}) // early only when they failed: the drain passes every point
	go func() { consumersDone.Wait(); close(consumersFinished) }()
kills:
	for k, point := range points {
		for ackedCount.Load() < point {
			select {
			case <-consumersFinished:
				break kills
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(r.IntN(5000)) * time.Microsecond)
		srv = gens.restart(t, srv, port, args)
		all = append(all, srv)
		t.Logf("kill %d after %d acknowledged reads", k+1, ackedCount.Load())
	}
	<-consumersFinished
	close(drained)
	producersDone.Wait()
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}

	// A graceful stop and one more restart: the state must still be there.
	srv.Signal(t, syscall.SIGTERM)
	if code := srv.ExitCode(t, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGTERM\n%s", code, srv.Logs)
	}
	srv = launch(t, port, args...)
	srv.WaitReady(t)
	if !strings.Contains(srv.Logs.String(), `"msg":"Kept the list the store holds instead of loading it","list":"drain"`) {
		t.Errorf("the restarted server did not keep its restored list:\n%s", srv.Logs)
	}

	remaining := srv.Export(t, "drain")
	seen := make(map[string]int, lines)
	for _, read := range acked {
		for _, line := range read {
			if seen[line]++; seen[line] > 1 {
				t.Fatalf("%s was acknowledged twice", line)
			}
		}
	}
	total := len(seen)
	for _, line := range remaining {
		if seen[line]++; seen[line] > 1 {
			t.Fatalf("%s was acknowledged and is still in the list", line)
		}
	}
	lost := 0
	for _, line := range want {
		if seen[line] == 0 {
			lost++
		}
	}
	if len(seen) != lines-lost {
		t.Fatalf("%d distinct lines seen, of which some are not in the input", len(seen))
	}
	inflight := int(inflightReads.Load())
	t.Logf("%d lines: %d acknowledged + %d remaining + %d lost with the %d reads in flight at %d kills, in %v",
		lines, total, len(remaining), lost, inflight, kills, time.Since(started).Round(time.Millisecond))
	if lost > inflight || inflight > consumers*kills {
		t.Fatalf("%d lines lost with %d reads in flight (at most %d)", lost, inflight, consumers*kills)
	}

	present := map[string]int{}
	for _, line := range srv.Export(t, "adds") {
		if present[line]++; present[line] > 1 {
			t.Fatalf("ADD %s is in the list twice", line)
		}
	}
	var adds, possible int
	for p := range producers {
		for _, line := range added[p] {
			adds++
			if present[line] != 1 {
				t.Fatalf("acknowledged ADD %s is in the list %d times after the restarts", line, present[line])
			}
		}
		possible += len(added[p]) + len(inflightAdds[p])
	}
	if len(present) > possible {
		t.Fatalf("%d lines in the ADD list, more than the %d sent", len(present), possible)
	}
	t.Logf("%d ADDs acknowledged, all present; %d in flight at the kills", adds, possible-adds)
	snapshots := 0
	for _, p := range all {
		snapshots += strings.Count(p.Logs.String(), `"msg":"Wrote snapshot"`)
	}
	if snapshots == 0 {
		t.Error("no snapshot was written during the run: the kills did not meet any")
	}
	t.Logf("%d snapshots written across the runs", snapshots)
}
