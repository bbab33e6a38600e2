package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/stsproc"
)

// TestAdversarialMemoryBudgetBoundsRSS makes a server hold as much as clients can make it hold,
// each way at once until refused: empty lines (22.4M of them took 992 MB of RSS under
// --max-total-bytes 1Mi when only text counted), leases and REQUEST_ID outcomes. Each is charged
// to --max-total-bytes with its bookkeeping, so the refusals come in time: the peak RSS stays
// within the formula docs/security.md states, twice the budget and memoryBase (the Go memory
// limit sts sets from the budget).
func TestAdversarialMemoryBudgetBoundsRSS(t *testing.T) {
	const budget = 16 << 20
	port := stsproc.FreePort(t)
	srv := launch(t, port, "--max-total-bytes", fmt.Sprint(budget), "--max-body-bytes", "2Mi")
	srv.WaitReady(t)
	idle := procStatusKiB(t, srv.Pid, "VmRSS")
	post := func(target, body string) int {
		resp, err := http.Post(srv.Base+target, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(target string) int {
		resp, err := http.Get(srv.Base + target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	empty := strings.Repeat("\n", 64<<10)
	loads := 0
	// Every loop ends at its refusal, or fails at a bound a working budget never reaches.
	for ; post(fmt.Sprintf("/sts/LOAD?FILENAME=l%d&MODE=LAST&FORMAT=JSON", loads%4), empty) == http.StatusOK; loads++ {
		if loads > 1000 {
			t.Fatalf("%d LOADs of 64Ki lines were taken under a budget of %d MiB", loads, budget>>20)
		}
	}
	// Room again for the leases and outcomes: a quarter of the lines go each time.
	get("/sts/RESET?FILENAME=l0&FORMAT=JSON")
	leases := 0
	for ; get("/sts/READ?FILENAME=l1&LEASE=3600000&FORMAT=JSON") == http.StatusOK; leases++ {
		if leases > budget/store.LeaseOverhead {
			t.Fatalf("%d leases were taken under a budget of %d MiB", leases, budget>>20)
		}
	}
	get("/sts/RESET?FILENAME=l2&FORMAT=JSON")
	outcomes := 0
	for ; get(fmt.Sprintf("/sts/READ?FILENAME=l3&KEEP=FALSE&FORMAT=JSON&REQUEST_ID=%064d", outcomes)) == http.StatusOK; outcomes++ {
		if outcomes > budget/store.OutcomeOverhead {
			t.Fatalf("%d REQUEST_ID outcomes were kept under a budget of %d MiB", outcomes, budget>>20)
		}
	}
	peak := procStatusKiB(t, srv.Pid, "VmHWM")
	t.Logf("--max-total-bytes %d MiB: %d LOADs of 64Ki empty lines, %d leases, %d REQUEST_ID outcomes until refused; RSS idle %d MiB, peak %d MiB (%.2f budgets above idle)",
		budget>>20, loads, leases, outcomes, idle>>20, peak>>20, float64(peak-idle)/budget)
	if bound := int64(2*budget + memoryBase); peak > bound {
		t.Errorf("peak RSS %d MiB is over twice the budget and the base, %d MiB", peak>>20, bound>>20)
	}
}
