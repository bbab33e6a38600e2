//go:build examples

// Package examples runs the load-test examples under examples/ with real load generators against
// the sts binary, as their users would: the JMeter plan (unchanged, with Debian's JMeter 2.13) and
// the Locust file (with Debian's Locust). Their own checks (answers, regular expressions on the
// HTML bodies, UNIQUE adds that fail on a line handed out twice) must all pass, and the lists
// they leave behind must add up. `make examples-test` prepares the tools (hack/load-tools.sh) and
// the binary, then runs it.
package examples

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The binaries under test, which `make examples-test` builds.
var (
	stsBinary    = absolute("../../bin/sts")
	jmeterBinary = absolute("../../bin/jmeter/jmeter")
)

func absolute(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return p
}

const (
	dataDir  = "../../examples/data"
	logins   = 20 // lines of examples/data/logins.csv
	coupons  = 50 // lines of examples/data/coupons.csv
	pollWait = 10 * time.Second
)

// server is a running sts binary.
type server struct{ base, port string }

// serveExampleData starts sts on a copy of examples/data, with no list loaded, as `make run-sts`.
func serveExampleData(t *testing.T) *server {
	t.Helper()
	port := freePort(t)
	return startSTS(t, port, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dataset-dir", copyData(t))
}

// startSTS runs the sts binary with args, which make it listen on 127.0.0.1:port, waits until
// it is ready and stops it when the test ends.
func startSTS(t *testing.T, port int, args ...string) *server {
	t.Helper()
	cmd := exec.Command(stsBinary, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", stsBinary, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sts log:\n%s", log.String())
		}
	})
	srv := &server{base: "http://127.0.0.1:" + strconv.Itoa(port), port: strconv.Itoa(port)}
	deadline := time.Now().Add(pollWait)
	for {
		resp, err := http.Get(srv.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return srv
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sts not ready after %v: %v\n%s", pollWait, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// requireLengths checks list lengths in the JSON form of STATUS.
func requireLengths(t *testing.T, srv *server, want map[string]int) {
	t.Helper()
	var status struct {
		Lists []struct {
			Name   string `json:"name"`
			Length int    `json:"length"`
		} `json:"lists"`
	}
	if err := json.Unmarshal([]byte(srv.get(t, "/sts/STATUS?FORMAT=JSON")), &status); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range status.Lists {
		got[l.Name] = l.Length
	}
	for name, n := range want {
		if length, ok := got[name]; !ok || length != n {
			t.Errorf("list %s: length %d (present %v), want %d", name, length, ok, n)
		}
	}
}

// export returns a list's lines.
func (s *server) export(t *testing.T, list string) []string {
	t.Helper()
	body := s.get(t, "/sts/EXPORT?FILENAME="+list)
	if body == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(body, "\n"), "\n")
}

func (s *server) get(t *testing.T, target string) string {
	t.Helper()
	resp, err := http.Get(s.base + target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d, %v: %s", target, resp.StatusCode, err, b)
	}
	return string(b)
}

// copyData copies examples/data into a fresh dataset directory.
func copyData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"logins.csv", "coupons.csv"} {
		b, err := os.ReadFile(filepath.Join(dataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fileLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func sorted(lines []string) []string { return slices.Sorted(slices.Values(lines)) }

// readCSV reads a CSV file with a header row into one map per record, column name to value. It
// fails the test when the file cannot be read, has no record, or lacks one of the columns.
func readCSV(t *testing.T, path string, columns ...string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %d rows, %v", path, len(rows), err)
	}
	for _, c := range columns {
		if !slices.Contains(rows[0], c) {
			t.Fatalf("%s has no column %s: %q", path, c, rows[0])
		}
	}
	var records []map[string]string
	for _, r := range rows[1:] {
		record := map[string]string{}
		for i, name := range rows[0] {
			record[name] = r[i]
		}
		records = append(records, record)
	}
	return records
}
