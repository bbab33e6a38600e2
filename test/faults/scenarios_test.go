package faults

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestNemeses runs every nemesis against the mixed workload (READ FIRST/LAST/RANDOM, leased READs
// then ACK, RELEASE or nothing, FIND, ADD with and without UNIQUE, and READ FIRST/ADD LAST for
// Porcupine), one cluster per setup: each nemesis once under make test; under make faults
// (STS_FAULT_CYCLES, -cycles) the setup's share of the campaign's cycles, in an order drawn from
// the seed.
func TestNemeses(t *testing.T) {
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			c := setup.start(t)
			r := newRun(t, c, backendLabel(c))
			for i, nem := range plan(setup.nemeses, setup.share, rngFor(t.Name(), 0)) {
				r.cycle(i, &nem, mixedLoad)
			}
			r.wait() // here: a server a nemesis restarted is stopped by a cleanup that runs before r's
		})
	}
}

func backendLabel(c *cluster) string {
	switch c.backend {
	case "redis":
		return "redis, 3 sts (AOF always, via Toxiproxy)"
	case "redis-sentinel":
		return "redis-sentinel, 2 sts (--redis-min-replicas 1)"
	}
	return "memory, 1 sts (--state-dir)"
}

// plan is the nemeses of a setup's cycles: each once, or in a campaign share/200 of its cycles,
// shuffled.
func plan(nemeses []nemesis, share int, rng *rand.Rand) []nemesis {
	each := 1
	if total := campaignCycles(); total > 0 {
		each = max(1, (total*share/200+len(nemeses)/2)/len(nemeses))
	}
	var p []nemesis
	for range each {
		p = append(p, nemeses...)
	}
	rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// issueLoad is the issue's clients: 8 reading KEEP=FALSE, FORMAT=JSON, a fresh REQUEST_ID per line.
var issueLoad = workload{readers: 8, lines: 50000, think: 2 * time.Millisecond, before: 1500 * time.Millisecond, after: 3 * time.Second}

// TestIssueRedisPause is issue 23's first scenario: 8 clients reading through three sts on
// Redis while Redis is paused 6 s. It found 4 ids answered in_progress for over 40 s, and in
// another run 5 lines lost.
func TestIssueRedisPause(t *testing.T) {
	t.Parallel()
	r := newRun(t, redisCluster(t, 3), "redis, 3 sts, 8 readers (issue 23)")
	r.cycle(0, &redisPause, issueLoad)
	r.wait()
}

// TestIssueSTSKilled is issue 23's second scenario: one of the three sts SIGKILLed mid-run, the
// readers going on through the two others. It found 1 line lost and 1 id stranded in_progress.
func TestIssueSTSKilled(t *testing.T) {
	t.Parallel()
	r := newRun(t, redisCluster(t, 3), "redis, 3 sts, 8 readers (issue 23)")
	r.cycle(0, &stsKillForGood, issueLoad)
	r.wait()
}

// TestIssueReload is issue 23's third scenario: RELOAD through one server while leased READs
// (LEASE=4000, then ACK, RELEASE or nothing) run through two others on a 300 000-line list. It
// found 529 lines in the list twice once the leases had expired: the leases taken during the
// RELOAD's upload survived it.
func TestIssueReload(t *testing.T) {
	t.Parallel()
	const list = "big"
	lines := testutil.Numbered(list, 300000)
	path := filepath.Join(t.TempDir(), "big.csv")
	if err := os.WriteFile(path, []byte(testutil.File(lines)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := redisCluster(t, 3, "--load", list+"="+path)
	r := newRun(t, c, "redis, 3 sts, 300 000 lines (issue 23)")
	h := NewHistory(r.start)

	var stop atomic.Bool
	var readers sync.WaitGroup
	for i := range 8 {
		cl := NewClient(h, i, c.bases()[1:], rngFor(t.Name()+"/reader", i), "reload")
		cl.ResendRate = 0.1
		readers.Go(func() {
			for !stop.Load() {
				leased(cl, list, 4000, 200*time.Millisecond)
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	rc := NewClient(h, 50, c.bases(), rngFor(t.Name()+"/reload", 0), "reload")
	reload := rc.NewOp(Reload, "RELOAD", list, nil)
	rc.Do(reload)
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	readers.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final, err := settled(ctx, c.bases(), list)
	if err != nil {
		t.Fatal(err)
	}
	var others []*Op
	for _, op := range Of(h.Ops(), list) {
		if op != reload {
			others = append(others, op)
		}
	}
	v := CheckReload(ReloadInput{List: list, File: lines, Reload: reload, Ops: others, Final: final})
	win := Window{Name: "reload", Injected: reload.Call, Healed: max(reload.Return, reload.Call)}
	waits := RecoveryWaits(h.Ops(), win)
	figures.add(r.label, "RELOAD under leased READs", &v, Ambiguous(h.Ops()), "", waits)
	t.Logf("RELOAD %s answered %s after %v; %s; %d lines at the end", reload.ID, describe(reload.Answer()), (reload.Return - reload.Call).Round(time.Millisecond), v.String(), len(final))
	if v.Failed() {
		r.fail(0, win, &v, h.Ops())
	}
}
