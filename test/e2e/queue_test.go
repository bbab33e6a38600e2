//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// testQueue: a producer/consumer queue across pods. Three producer pods ADD LAST their own
// numbered lines while two consumer pods READ FIRST KEEP=FALSE; every produced line is consumed
// exactly once, and each consumer sees each producer's lines in the order they were added.
func testQueue(t *testing.T) {
	ns := newNamespace(t, "queue")
	tableServer := newServer(ns, "queue") // no dataset: the first ADD creates the list
	create(t, tableServer)
	ledger := newLedger(t, ns)
	tableServer = waitServing(t, tableServer)

	const producers, perProducer = 3, 400
	produce := startJob(t, ns, jobSpec{name: "producers", pods: producers, indexed: true, args: []string{
		"produce", "-url", tableServer.Status.Endpoint, "-list", "orders", "-prefix", "p$(JOB_COMPLETION_INDEX)",
		"-count", strconv.Itoa(perProducer), "-rate", "80",
	}})
	// The consumers wait for lines until none came for 15 seconds.
	consume := startJob(t, ns, jobSpec{name: "consumers", pods: 2, args: consumeArgs(tableServer, ledger, "orders", "-mode", "FIRST", "-idle", "15s")})
	waitJob(t, produce, 5*time.Minute)
	waitJob(t, consume, 5*time.Minute)
	byPod := consumedByPod(t, consume, ledger)

	var input []string
	for p := range producers {
		input = append(input, testutil.Numbered("p"+strconv.Itoa(p), perProducer)...)
	}
	if missing := handedOut(t, input, byPod); missing > 0 {
		t.Errorf("%d produced lines were never consumed", missing)
	}
	for pod, c := range byPod {
		t.Logf("consumer %s read %d lines", pod, c.read)
		last := map[string]int{} // producer prefix -> index of its latest line this consumer got
		for _, l := range c.lines {
			prefix, index, _ := strings.Cut(l, "-")
			i, _ := strconv.Atoi(index)
			if prev, ok := last[prefix]; ok && i <= prev {
				t.Errorf("consumer %s got %s after %s-%06d: the queue is not first in, first out", pod, l, prefix, prev)
				break
			}
			last[prefix] = i
		}
	}
	waitListLength(t, tableServer, "orders", 0)
}
