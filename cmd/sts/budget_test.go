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
	srv := launchWithoutRace(t, port, "--max-total-bytes", fmt.Sprint(budget), "--max-body-bytes", "2Mi") // measures RSS
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

// TestAdversarialReturnsDoNotOutliveTheirLines replays the probe that took RSS from 14 to 413 MB
// in 300 rounds: with one long lease held, each round ADDs a new 1 MB line, takes it under a
// lease, RELEASEs it (its return is counted) and RESETs the list. A RESET drops the returns of the
// lines it drops, so the text of each round's line is let go.
func TestAdversarialReturnsDoNotOutliveTheirLines(t *testing.T) {
	const rounds = 200
	port := stsproc.FreePort(t)
	srv := launchWithoutRace(t, port, "--max-line-bytes", "2Mi", "--max-body-bytes", "4Mi") // measures RSS
	srv.WaitReady(t)
	send := func(method, target, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.Base+target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", method, target, resp.StatusCode)
		}
		return resp
	}
	send(http.MethodGet, "/sts/ADD?FILENAME=q&LINE=held&FORMAT=JSON", "")
	send(http.MethodGet, "/sts/READ?FILENAME=q&LEASE=3600000&FORMAT=JSON", "")
	idle := procStatusKiB(t, srv.Pid, "VmRSS")
	for i := range rounds {
		line := fmt.Sprintf("%04d", i) + strings.Repeat("x", 1<<20)
		send(http.MethodPost, "/sts/ADD", "FILENAME=q&FORMAT=JSON&LINE="+line)
		lease := send(http.MethodGet, "/sts/READ?FILENAME=q&LEASE=3600000&FORMAT=JSON", "").Header.Get("X-STS-Lease")
		send(http.MethodGet, "/sts/RELEASE?FORMAT=JSON&LEASE="+lease, "")
		send(http.MethodGet, "/sts/RESET?FILENAME=q&FORMAT=JSON", "")
	}
	after := procStatusKiB(t, srv.Pid, "VmRSS")
	t.Logf("%d rounds of a 1 MiB line leased, released and reset under a held lease: RSS %d MiB -> %d MiB", rounds, idle>>20, after>>20)
	if after-idle > 64<<20 {
		t.Errorf("RSS grew by %d MiB: the returns of the lines reset kept their text", (after-idle)>>20)
	}
}
