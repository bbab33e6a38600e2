package sts

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

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
