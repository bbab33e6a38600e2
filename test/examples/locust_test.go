//go:build examples

package examples

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// locustfile is the example Locust file, run unchanged.
const locustfile = "../../examples/locust/locustfile.py"

// The Locust file with two users of each pattern for a few seconds, loading the lists itself
// (STS_INIT=true) as the examples' README says for a local server: no request and no check fails,
// the coupons handed out and those left are the file's, each once, and no order is taken twice.
func TestLocustfile(t *testing.T) {
	srv := serveExampleData(t)
	stats := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command("locust", "-f", locustfile, "--headless", "-u", "8", "-r", "8", "-t", "5s", "--stop-timeout", "10",
		"--host", srv.Base, "--csv", stats, "--only-summary", "--exit-code-on-error", "1")
	cmd.Env = append(os.Environ(), "STS_INIT=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("locust: %v\n%s", err, out.String())
	}

	requests, failures := locustTotals(t, stats+"_stats.csv")
	t.Logf("locust sent %d requests", requests)
	if requests == 0 || failures != 0 {
		t.Errorf("locust: %d requests, %d failures\n%s", requests, failures, out.String())
	}
	if got, want := sorted(srv.Export(t, "logins.csv")), sorted(fileLines(t, "logins.csv")); !slices.Equal(got, want) {
		t.Errorf("logins.csv after KEEP=TRUE reads: %q, want the file's logins", got)
	}
	used := srv.Export(t, "used-coupons")
	if got, want := sorted(append(used, srv.Export(t, "coupons.csv")...)), sorted(fileLines(t, "coupons.csv")); len(used) == 0 || !slices.Equal(got, want) {
		t.Errorf("coupons used %q and left do not make up the file's, each once", used)
	}
	orders := append(srv.Export(t, "orders-done"), srv.Export(t, "orders-queue")...)
	if len(orders) == 0 || len(slices.Compact(sorted(orders))) != len(orders) {
		t.Errorf("orders done and queued: %q, want some, each once", orders)
	}
}

// locustTotals reads the request and failure counts of the Aggregated row of Locust's stats CSV.
func locustTotals(t *testing.T, path string) (requests, failures int) {
	t.Helper()
	records := readCSV(t, path, "Name", "Request Count", "Failure Count")
	for _, r := range records {
		if r["Name"] == "Aggregated" {
			requests, _ = strconv.Atoi(r["Request Count"])
			failures, _ = strconv.Atoi(r["Failure Count"])
			return requests, failures
		}
	}
	t.Fatalf("locust stats have no Aggregated row: %v", records)
	return 0, 0
}
