package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestCrashKeepsLeases: clients read a journaled list with short leases and, at random,
// acknowledge what they read or drop it as a crashed client would, while the server is SIGKILLed
// and restarted on its state directory. Leases must outlive the kills: a line is never served
// while a lease on it runs (its expiry, sent in X-STS-Lease-Expires, survives restarts), never
// again once its ACK was answered OK, and in the end every line was acknowledged exactly once or
// is back in the list, but for the ACKs lost in flight at a kill, whose lines may be either.
func TestCrashKeepsLeases(t *testing.T) {
	const clients, kills, lease = 16, 3, 400 * time.Millisecond
	lines := 3000
	if testing.Short() {
		lines = 600
	}
	state := t.TempDir()
	input, want := numberedInput(t, lines)
	port := stsproc.FreePort(t)
	// A small snapshot threshold, so that snapshots carry leases too.
	args := []string{"--state-dir", state, "--load", "q=" + input, "--snapshot-bytes", "64Ki", "--log-format", "json"}
	gens := &generations{newer: make(chan struct{})}
	srv := launch(t, port, args...)
	srv.WaitReady(t)
	addr := strings.TrimPrefix(srv.Base, "http://")

	type holding struct{ expires time.Time } // the lease a line was last served under
	var (
		mu        sync.Mutex
		held      = map[string]holding{}
		acked     = map[string]bool{}
		uncertain = map[string]bool{} // ACKs lost in flight
		done      atomic.Int64        // lines acknowledged or uncertain
		failures  = make(chan error, clients)
	)
	serve := func(line string, expires time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if acked[line] {
			return fmt.Errorf("%s served again after its ACK was answered OK", line)
		}
		if h, ok := held[line]; ok && now.Before(h.expires) && !uncertain[line] {
			return fmt.Errorf("%s served at %v while its lease runs until %v", line, now.Format(time.StampMicro), h.expires.Format(time.StampMicro))
		}
		held[line] = holding{expires}
		return nil
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			client := &rawClient{addr: addr}
			r := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for done.Load() < int64(lines) {
				status, body, lost, err := gens.call(client, fmt.Sprintf("/sts/READ?FILENAME=q&KEEP=FALSE&LEASE=%d", lease.Milliseconds()))
				if err != nil {
					failures <- err
					return
				}
				if lost || body == testutil.KOBody("No more line !") {
					time.Sleep(20 * time.Millisecond) // the others hold the lines: they come back
					continue
				}
				line, ok := testutil.OKLine(body)
				id := client.header.Get("X-STS-Lease")
				expires, perr := time.Parse(time.RFC3339Nano, client.header.Get("X-STS-Lease-Expires"))
				if status != http.StatusOK || !ok || id == "" || perr != nil {
					failures <- fmt.Errorf("READ with a lease answered %d %q, lease %q (%v)", status, body, id, perr)
					return
				}
				if err := serve(line, expires); err != nil {
					failures <- err
					return
				}
				if r.IntN(2) == 0 {
					continue // dropped: the lease runs out
				}
				status, body, lost, err = gens.call(client, "/sts/ACK?LEASE="+id)
				switch {
				case err != nil:
					failures <- err
					return
				case lost:
					mu.Lock()
					uncertain[line] = true
					mu.Unlock()
					done.Add(1)
				case status == http.StatusOK && body == testutil.OKBody(""):
					mu.Lock()
					acked[line] = true
					mu.Unlock()
					done.Add(1)
				case status == http.StatusConflict: // it ran out first: the line is back
				default:
					failures <- fmt.Errorf("ACK answered %d %q", status, body)
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
kills:
	for k := range kills {
		point := int64(lines * (k + 1) / (kills + 2))
		for done.Load() < point {
			select {
			case <-finished:
				break kills
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(r.IntN(int(lease.Microseconds()))) * time.Microsecond)
		srv = gens.restart(t, srv, port, args)
		t.Logf("kill %d with %d lines acknowledged", k+1, done.Load())
	}
	<-finished
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}

	// Leases still running (dropped reads, ACKs lost and never applied) give their lines back.
	testutil.Until(t, time.Minute, 50*time.Millisecond, "every lease to end", func() bool {
		var status protocol.Answer
		resp, err := http.Get(srv.Base + "/sts/STATUS?FORMAT=JSON")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&status) == nil && len(status.Lists) == 1 && status.Lists[0].Leased == 0
	})
	remaining := srv.Export(t, "q")
	seen := map[string]bool{}
	for _, line := range remaining {
		if seen[line] {
			t.Fatalf("%s is in the list twice", line)
		}
		if acked[line] {
			t.Fatalf("%s was acknowledged and is back in the list", line)
		}
		seen[line] = true
	}
	missing := 0
	for _, line := range want {
		if !seen[line] && !acked[line] && !uncertain[line] {
			missing++
		}
	}
	t.Logf("%d lines: %d acknowledged, %d ACKs lost in flight at %d kills, %d left in the list", lines, len(acked), len(uncertain), kills, len(remaining))
	if missing > 0 {
		t.Fatalf("%d lines neither acknowledged nor back in the list", missing)
	}
}
