package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestAdversarialOverlappingFindsDoNotGrowMemory replays the probe that took RSS from 36 to
// 881 MB in 100 s while the list held 10 MB: four FINDs of a second each, in loops, so that one
// always runs, and eight writers that ADD and consume at the list's front, moving every index.
// Each change was logged for the FINDs that were scanning, and a log was emptied only when no
// FIND scanned. The log is now compacted past what the oldest scan has seen, so RSS stays flat.
func TestAdversarialOverlappingFindsDoNotGrowMemory(t *testing.T) {
	const (
		finders, writers = 4, 8
		maxGrowth        = 16 << 20
	)
	run := 15 * time.Second
	if testutil.FullAttacks {
		run = 100 * time.Second
	}
	port := stsproc.FreePort(t)
	srv := launchWithoutRace(t, port, "--regex-timeout", "1s") // measures RSS
	srv.WaitReady(t)
	get := func(target string) int {
		resp, err := http.Get(srv.Base + target)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// (a+)+$ takes the whole regex budget, a second, on this line; the list holds 10 MB besides.
	if status := get("/sts/ADD?FILENAME=l&FORMAT=JSON&LINE=" + strings.Repeat("a", 40) + "!"); status != http.StatusOK {
		t.Fatalf("ADD: %d", status)
	}
	filler := strings.Repeat("x", 1000)
	body := strings.Repeat(filler+"\n", 10000)
	resp, err := http.Post(srv.Base+"/sts/LOAD?FILENAME=l&MODE=LAST&FORMAT=JSON", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("LOAD: %d", resp.StatusCode)
	}
	idle := procStatusKiB(t, srv.Pid, "VmRSS")
	var finds, changes atomic.Int64
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for range finders {
		wg.Go(func() {
			for time.Now().Before(stop) {
				get("/sts/FIND?FILENAME=l&FIND_MODE=REGEX_FIND&KEEP=TRUE&FORMAT=JSON&LINE=(a%2B)%2B%24")
				finds.Add(1)
			}
		})
	}
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				if get(fmt.Sprintf("/sts/ADD?FILENAME=l&ADD_MODE=FIRST&FORMAT=JSON&LINE=w%d-%d%s", w, i, filler)) == http.StatusOK &&
					get("/sts/READ?FILENAME=l&READ_MODE=FIRST&KEEP=FALSE&FORMAT=JSON") == http.StatusOK {
					changes.Add(2)
				}
			}
		})
	}
	// The heap grows to its working size in the first third; a log that keeps changes goes on
	// growing with them after it (by 2.6 MB/s here).
	time.Sleep(run / 3)
	warm := procStatusKiB(t, srv.Pid, "VmRSS")
	wg.Wait()
	peak := procStatusKiB(t, srv.Pid, "VmHWM")
	t.Logf("%v of %d FINDs of 1 s in loops and %d writers on 10 MB: %d FINDs, %d changes; RSS idle %d MiB, after %v %d MiB, peak %d MiB",
		run, finders, writers, finds.Load(), changes.Load(), idle>>20, (run / 3).Round(time.Second), warm>>20, peak>>20)
	if changes.Load() == 0 || finds.Load() < finders {
		t.Fatalf("%d changes and %d FINDs: the attack did not run", changes.Load(), finds.Load())
	}
	if peak-warm > maxGrowth {
		t.Errorf("RSS grew by %d MiB in the last two thirds of the attack: the FINDs' scan log kept the changes made while they overlapped", (peak-warm)>>20)
	}
}
