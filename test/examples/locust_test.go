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
// The leased vouchers too: each used once or back in vouchers.csv, none still leased, as many
// given back as the users released, with ACK, RELEASE and EXTEND all sent.
func TestLocustfile(t *testing.T) {
	srv := serveExampleData(t)
	stats := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command("locust", "-f", locustfile, "--headless", "-u", "10", "-r", "10", "-t", "5s", "--stop-timeout", "10",
		"--host", srv.Base, "--csv", stats, "--only-summary", "--exit-code-on-error", "1")
	cmd.Env = append(os.Environ(), "STS_INIT=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("locust: %v\n%s", err, out.String())
	}

	counts := locustStats(t, stats+"_stats.csv")
	total := counts["Aggregated"]
	t.Logf("locust sent %d requests (%v)", total.requests, counts)
	if total.requests == 0 || total.failures != 0 {
		t.Errorf("locust: %d requests, %d failures\n%s", total.requests, total.failures, out.String())
	}
	if got, want := sorted(srv.Export(t, "logins.csv")), sorted(fileLines(t, "logins.csv")); !slices.Equal(got, want) {
		t.Errorf("logins.csv after KEEP=TRUE reads: %q, want the file's logins", got)
	}
	if used := requireAccountedFor(t, srv, "coupons.csv", "used-coupons"); len(used) == 0 {
		t.Error("no coupon used")
	}
	orders := append(srv.Export(t, "orders-done"), srv.Export(t, "orders-queue")...)
	if len(orders) == 0 || len(slices.Compact(sorted(orders))) != len(orders) {
		t.Errorf("orders done and queued: %q, want some, each once", orders)
	}
	if used := requireAccountedFor(t, srv, "vouchers.csv", "used-vouchers"); len(used) == 0 {
		t.Error("no voucher used")
	}
	for _, command := range []string{"ACK", "RELEASE", "EXTEND"} {
		if counts[command].requests == 0 {
			t.Errorf("locust sent no %s", command)
		}
	}
	requireLeases(t, srv, "vouchers.csv", counts["RELEASE"].requests, 0)
}

// locustCount is a row of Locust's stats CSV.
type locustCount struct{ requests, failures int }

// locustStats reads the request and failure counts of Locust's stats CSV by name (the command,
// or Aggregated for all).
func locustStats(t *testing.T, path string) map[string]locustCount {
	t.Helper()
	counts := map[string]locustCount{}
	for _, r := range readCSV(t, path, "Name", "Request Count", "Failure Count") {
		requests, _ := strconv.Atoi(r["Request Count"])
		failures, _ := strconv.Atoi(r["Failure Count"])
		counts[r["Name"]] = locustCount{requests, failures}
	}
	if _, ok := counts["Aggregated"]; !ok {
		t.Fatalf("locust stats have no Aggregated row: %v", counts)
	}
	return counts
}
