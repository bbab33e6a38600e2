package sts

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// keepAliveClient is an HTTP client that keeps up to conns connections open to one host.
func keepAliveClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// TestConcurrentConsumersReadEachLineOnce has 64 clients drain a list with READ KEEP=FALSE over
// keep-alive connections; every line must be read exactly once.
func TestConcurrentConsumersReadEachLineOnce(t *testing.T) {
	const clients = 64
	lines := 100_000
	if testing.Short() {
		lines = 10_000
	}
	ts := startServer(t)
	want := testutil.Numbered("line", lines)
	ts.writeFile(t, "big.txt", testutil.File(want))
	ts.expect(t, "/sts/INITFILE?FILENAME=big.txt", okBody(fmt.Sprint(lines)))

	client := keepAliveClient(clients)
	read := make([][]string, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for {
				resp, err := client.Get(ts.base + "/sts/READ?FILENAME=big.txt&KEEP=FALSE")
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if string(body) == koBody("No more line !") {
					return
				}
				line, ok := testutil.OKLine(string(body))
				if !ok {
					errs <- fmt.Errorf("unexpected answer %q", body)
					return
				}
				read[c] = append(read[c], line)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := make(map[string]int, lines)
	for _, r := range read {
		for _, line := range r {
			seen[line]++
		}
	}
	for _, line := range want {
		if n := seen[line]; n != 1 {
			t.Fatalf("%s was read %d times", line, n)
		}
	}
	if len(seen) != lines {
		t.Fatalf("%d distinct lines read, want %d", len(seen), lines)
	}
}

// TestConcurrentLeasedConsumersLoseNothing has 64 clients drain a list with leased READs over
// keep-alive connections, each acknowledging, releasing or dropping (as a crashed client would)
// what it read, at random, until every line is acknowledged or a minute has passed. Once every
// lease has ended, every line was acknowledged exactly once or is back in the list: none
// duplicated, none lost.
func TestConcurrentLeasedConsumersLoseNothing(t *testing.T) {
	const clients = 64
	lines := 3000
	if testing.Short() {
		lines = 1000
	}
	ts := startServer(t)
	want := testutil.Numbered("line", lines)
	ts.writeFile(t, "q.txt", testutil.File(want))
	ts.expect(t, "/sts/INITFILE?FILENAME=q.txt", okBody(fmt.Sprint(lines)))

	client := keepAliveClient(clients)
	get := func(target string) (*http.Response, string, error) {
		resp, err := client.Get(ts.base + target)
		if err != nil {
			return nil, "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body), err
	}
	acked := make([][]string, clients)
	var remaining atomic.Int64 // lines not acknowledged yet, as far as the clients know
	remaining.Store(int64(lines))
	deadline := time.Now().Add(time.Minute) // a lost line would otherwise keep the clients reading
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 3))
			for remaining.Load() > 0 && time.Now().Before(deadline) {
				resp, body, err := get("/sts/READ?FILENAME=q.txt&KEEP=FALSE&LEASE=300")
				if err != nil {
					errs <- err
					return
				}
				if body == koBody("No more line !") {
					time.Sleep(10 * time.Millisecond) // the lines are leased: some come back
					continue
				}
				line, ok := testutil.OKLine(body)
				id := resp.Header.Get("X-STS-Lease")
				if !ok || id == "" {
					errs <- fmt.Errorf("leased READ answered %q, lease %q", body, id)
					return
				}
				switch r.IntN(3) {
				case 0: // dropped: the lease runs out
				case 1:
					if _, body, err := get("/sts/RELEASE?LEASE=" + id); err != nil || body != okBody("") {
						errs <- fmt.Errorf("RELEASE answered %q (%v)", body, err)
						return
					}
				default:
					_, body, err := get("/sts/ACK?LEASE=" + id)
					switch {
					case err != nil:
						errs <- err
						return
					case body == koBody("Lease expired, its lines went back !"): // it ran out before: the line is back
					case body != okBody(""):
						errs <- fmt.Errorf("ACK answered %q", body)
						return
					default:
						acked[c] = append(acked[c], line)
						remaining.Add(-1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := make(map[string]int, lines)
	for _, a := range acked {
		for _, line := range a {
			if seen[line]++; seen[line] > 1 {
				t.Fatalf("%s was acknowledged twice", line)
			}
		}
	}
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the dropped leases to end", func() bool {
		_, status := ts.getAnswer(t, "/sts/STATUS?FORMAT=JSON")
		return status.Lists[0].Leased == 0
	})
	left := ts.lines(t, "q.txt")
	for _, line := range left {
		if seen[line]++; seen[line] > 1 {
			t.Fatalf("%s is in the list twice, or was acknowledged and is back", line)
		}
	}
	if len(seen) != lines {
		t.Fatalf("%d lines acknowledged and %d left: %d lost", len(seen)-len(left), len(left), lines-len(seen))
	}
	t.Logf("%d lines acknowledged, %d left", len(seen)-len(left), len(left))
}
