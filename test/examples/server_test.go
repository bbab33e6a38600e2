//go:build examples

// Package examples runs the load-test examples under examples/ with real load generators against
// the sts binary, as their users would: the JMeter plan (unchanged, with Debian's JMeter 2.13) and
// the Locust file (with Debian's Locust). Their own checks (answers, regular expressions on the
// HTML bodies, UNIQUE adds that fail on a line handed out twice) must all pass, and the lists
// they leave behind must add up. `make examples-test` prepares the tools (hack/load-tools.sh) and
// the binary, then runs it.
package examples

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/stsproc"
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
	vouchers = 30 // lines of examples/data/vouchers.csv
)

// server is a running sts binary and its port.
type server struct {
	*stsproc.Process
	port string
}

// serveExampleData starts sts on a copy of examples/data, with no list loaded, as `make run-sts`.
func serveExampleData(t *testing.T) *server {
	t.Helper()
	port := stsproc.FreePort(t)
	return startSTS(t, port, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dataset-dir", copyData(t))
}

// startSTS runs the sts binary with args, which make it listen on 127.0.0.1:port, and waits
// until it is ready.
func startSTS(t *testing.T, port int, args ...string) *server {
	t.Helper()
	p := stsproc.Start(t, stsBinary, port, args...)
	p.WaitReady(t)
	return &server{Process: p, port: strconv.Itoa(port)}
}

// lists reads the server's lists from the JSON form of STATUS, by name.
func lists(t *testing.T, srv *server) map[string]protocol.List {
	t.Helper()
	var status protocol.Answer
	if err := json.Unmarshal([]byte(srv.get(t, "/sts/STATUS?FORMAT=JSON")), &status); err != nil {
		t.Fatal(err)
	}
	byName := map[string]protocol.List{}
	for _, l := range status.Lists {
		byName[l.Name] = l
	}
	return byName
}

// requireLengths checks list lengths in the JSON form of STATUS.
func requireLengths(t *testing.T, srv *server, want map[string]int) {
	t.Helper()
	got := lists(t, srv)
	for name, n := range want {
		if l, ok := got[name]; !ok || l.Length != int64(n) {
			t.Errorf("list %s: length %d (present %v), want %d", name, l.Length, ok, n)
		}
	}
}

// requireAccountedFor checks that the lines of a dataset file are, each exactly once, either
// recorded in the list used (where the example adds what it consumed, UNIQUE) or still in the
// file's list, and returns the lines used. A line handed out twice, lost, or still held under a
// lease fails the test.
func requireAccountedFor(t *testing.T, srv *server, file, used string) []string {
	t.Helper()
	usedLines, left := srv.Export(t, used), srv.Export(t, file)
	if got, want := sorted(append(slices.Clone(usedLines), left...)), sorted(fileLines(t, file)); !slices.Equal(got, want) {
		t.Errorf("%s %q and %s left %q do not make up the file's lines, each once:\n%q", used, usedLines, file, left, want)
	}
	return usedLines
}

// requireLeases checks the lease figures of a list in STATUS: none leased any more, and the
// lines given back (released or expired) and sent to <list>.dead.
func requireLeases(t *testing.T, srv *server, list string, returned, deadLettered int) {
	t.Helper()
	l := lists(t, srv)[list]
	if l.Leased != 0 || l.Returned != int64(returned) || l.DeadLettered != int64(deadLettered) {
		t.Errorf("%s: leased %d, returned %d, dead-lettered %d; want 0, %d, %d", list, l.Leased, l.Returned, l.DeadLettered, returned, deadLettered)
	}
}

func (s *server) get(t *testing.T, target string) string {
	t.Helper()
	resp, err := http.Get(s.Base + target)
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
	for _, name := range []string{"logins.csv", "coupons.csv", "vouchers.csv"} {
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
