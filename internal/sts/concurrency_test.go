package sts

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
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
	var file strings.Builder
	for i := range lines {
		fmt.Fprintf(&file, "line-%06d\n", i)
	}
	ts.writeFile(t, "big.txt", file.String())
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
				line, ok := strings.CutPrefix(string(body), "<html><title>OK</title>\n<body>")
				if !ok {
					errs <- fmt.Errorf("unexpected answer %q", body)
					return
				}
				read[c] = append(read[c], strings.TrimSuffix(line, "</body>\n</html>"))
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
	for i := range lines {
		if n := seen[fmt.Sprintf("line-%06d", i)]; n != 1 {
			t.Fatalf("line %d was read %d times", i, n)
		}
	}
	if len(seen) != lines {
		t.Fatalf("%d distinct lines read, want %d", len(seen), lines)
	}
}
