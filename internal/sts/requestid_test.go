package sts

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// sameAnswer fails unless a retry's answer is the first one: status, body and the headers a
// client reads.
func sameAnswer(t testing.TB, what string, first, retry answer) {
	t.Helper()
	if retry.status != first.status || retry.body != first.body {
		t.Fatalf("%s: the retry got %d %q, the first %d %q", what, retry.status, retry.body, first.status, first.body)
	}
	for _, h := range []string{"Content-Type", "Content-Length", leaseHeader, leaseExpiresHeader, "Content-Security-Policy"} {
		if retry.header.Get(h) != first.header.Get(h) {
			t.Fatalf("%s: the retry's %s is %q, the first's %q", what, h, retry.header.Get(h), first.header.Get(h))
		}
	}
}

// A consuming READ retried with its REQUEST_ID gets the first answer, byte for byte, in either
// form, and consumes nothing more; so does a leased READ (the same lease) and its ACK. The same id
// with another request is refused.
func TestRequestIDReplaysTheFirstAnswer(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "a", "b", "c", "d")
	for _, target := range []string{
		"/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=r1",
		"/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=r2&FORMAT=JSON",
	} {
		first := ts.do(t, http.MethodGet, target, "", "")
		sameAnswer(t, target, first, ts.do(t, http.MethodGet, target, "", ""))
	}
	ts.checkLines(t, "q", "c", "d")

	leased := "/sts/READ?FILENAME=q&LEASE=60000&REQUEST_ID=r3"
	first := ts.do(t, http.MethodGet, leased, "", "")
	sameAnswer(t, leased, first, ts.do(t, http.MethodGet, leased, "", ""))
	if l := ts.listStatus(t, "q"); l.Leased != 1 || l.Length != 1 {
		t.Fatalf("STATUS of q after a retried leased READ: %+v", l)
	}
	ack := "/sts/ACK?LEASE=" + leaseOf(t, first, time.Minute) + "&REQUEST_ID=r4"
	ts.expect(t, ack, okBody(""))
	ts.expect(t, ack, okBody("")) // not "No such lease": the retry is told what the first was

	ts.expectKO(t, "/sts/READ?FILENAME=q&KEEP=FALSE&READ_MODE=LAST&REQUEST_ID=r1", http.StatusUnprocessableEntity,
		protocol.ReasonRequestIDReused, "REQUEST_ID was sent before with another request !")
	// The form of the answer is part of the request: the first was HTML.
	if a, js := ts.getAnswer(t, "/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=r1&FORMAT=JSON"); a.status != http.StatusUnprocessableEntity || js.Reason != protocol.ReasonRequestIDReused {
		t.Fatalf("the same READ in JSON under r1: %d %s", a.status, a.body)
	}
	ts.checkLines(t, "q", "d")
}

// A KO changed nothing, and records nothing: a retried READ that found the list empty runs again,
// and takes the line that came since (the client never saw the KO, or it would not retry). The
// method is not part of the request: an ADD sent again by POST is the same ADD.
func TestRequestIDRunsAKOAgainAndIgnoresTheMethod(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/ADD?FILENAME=q&LINE=x&REQUEST_ID=add", okBody(""))
	if a := ts.do(t, http.MethodPost, "/sts/ADD", "application/x-www-form-urlencoded", "FILENAME=q&LINE=x&REQUEST_ID=add"); a.body != okBody("") {
		t.Fatalf("ADD retried by POST: %q", a.body)
	}
	ts.checkLines(t, "q", "x")
	ts.get(t, "/sts/RESET?FILENAME=q")
	ts.expect(t, "/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=r", koBody("No more line !"))
	ts.expect(t, "/sts/ADD?FILENAME=q&LINE=y", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=q&LINE=z&ADD_MODE=LAST", okBody(""))
	ts.expect(t, "/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=r", okBody("y"))
	ts.expect(t, "/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=r", okBody("y"))
	ts.checkLines(t, "q", "z")
	// Commands that change nothing ignore REQUEST_ID, valid or not: a plan may send it always.
	ts.expect(t, "/sts/LENGTH?FILENAME=q&REQUEST_ID=r", okBody("1"))
	ts.expect(t, "/sts/LENGTH?FILENAME=q&REQUEST_ID=", okBody("1"))
}

// A retry that comes while the first request still waits for a line waits too: the line that
// comes goes to the first, and the retry answers it; nothing more is consumed.
func TestRequestIDRetryWaitsForTheFirstAnswer(t *testing.T) {
	ts := startServer(t)
	target := "/sts/READ?FILENAME=q&KEEP=FALSE&WAIT=10000&REQUEST_ID=w"
	first := ts.background(t, target)
	ts.untilWaiting(t, 1)
	retry := ts.background(t, target)
	ts.untilWaiting(t, 2)
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=q&MODE=LAST", "text/plain", "x\ny\n"); a.body != okBody("2") {
		t.Fatalf("LOAD: %q", a.body)
	}
	if got, again := first(), retry(); got != okBody("x") || again != got {
		t.Fatalf("the first READ got %q, its retry %q", got, again)
	}
	ts.checkLines(t, "q", "y")
}

// unavailableOnce is a store whose first Read cannot reach its backend: nothing is read.
type unavailableOnce struct {
	store.Store
	failed atomic.Bool
}

func (s *unavailableOnce) Read(ctx context.Context, name string, pos store.Position, n int, keep bool, wait time.Duration) ([]string, error) {
	if s.failed.CompareAndSwap(false, true) {
		return nil, store.ErrUnavailable
	}
	return s.Store.Read(ctx, name, pos, n, keep, wait)
}

// An answer that asks for a retry (503, nothing changed) is not the answer of the retry: it runs
// the command.
func TestRequestIDRetriesAfterATryAgain(t *testing.T) {
	requireMemory(t, "the failing store wraps the memory store")
	cfg := testConfig(t)
	st := &unavailableOnce{Store: memory.New()}
	srv, err := NewServer(cfg, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: srv, store: st, cfg: cfg, dir: cfg.DatasetDir}
	ts.listen(t)
	ts.expect(t, "/sts/ADD?FILENAME=q&LINE=a", okBody(""))
	target := "/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=t"
	if a := ts.do(t, http.MethodGet, target, "", ""); a.status != http.StatusServiceUnavailable || a.body != koBody("Storage backend unavailable, retry later !") {
		t.Fatalf("READ with the backend down: %d %q", a.status, a.body)
	}
	ts.expect(t, target, okBody("a"))
	ts.expect(t, target, okBody("a"))
	ts.checkLines(t, "q")
}

// A READ sent to a Redis that is paused past the client's timeout is answered 503
// outcome_unknown: Redis runs it when it wakes, and its reply is lost. Its retry with the same
// REQUEST_ID answers the line it took, and takes no other; a READ without one could not know.
func TestRequestIDAnswersAReplyLostOnAPausedRedis(t *testing.T) {
	t.Parallel() // waits out the client's read timeout
	srv := redistest.Start(t)
	ts := startOnRedis(t, srv.URL(), testConfig(t))
	target := "/sts/READ?FILENAME=q&KEEP=FALSE&FORMAT=JSON"
	// A first try that met an empty list binds the id, as a try that met a 503 would: this
	// server's next tries need Redis for the READ only, which the pause then catches in flight.
	if a, js := ts.getAnswer(t, target+"&REQUEST_ID=lost"); js.Reason != protocol.ReasonNotLoaded {
		t.Fatalf("READ of no list: %d %s", a.status, a.body)
	}
	ts.loadList(t, "q", "a", "b", "c", "d")
	// lost sends target to the paused Redis, which runs it once thawed, leaving want.
	lost := func(target string, want ...string) {
		t.Helper()
		srv.Freeze(t)
		if a, js := ts.getAnswer(t, target); a.status != http.StatusServiceUnavailable || js.Reason != protocol.ReasonOutcomeUnknown {
			t.Errorf("%s with Redis paused: %d %s", target, a.status, a.body)
		}
		srv.Thaw(t)
		testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the lost READ to run", func() bool {
			return slices.Equal(ts.lines(t, "q"), want)
		})
	}
	lost(target+"&REQUEST_ID=lost", "b", "c", "d")
	if a, _ := ts.getAnswer(t, target+"&REQUEST_ID=lost"); a.body != `{"ok":true,"command":"READ","value":"a"}`+"\n" {
		t.Fatalf("the retry answered %d %s, want the line its first try took", a.status, a.body)
	}
	ts.checkLines(t, "q", "b", "c", "d")
	lost(target, "c", "d")
}

// RELOAD through one server while leased READs go through another: a lease taken while the
// reloaded content was being uploaded ends with the reload, so that its line does not come back
// beside the reloaded copy of it.
func TestReloadEndsTheLeasesTakenDuringItsUpload(t *testing.T) {
	srv := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "big.csv")
	var content strings.Builder
	const lines = 100_000
	for i := range lines {
		fmt.Fprintf(&content, "line-%06d\n", i)
	}
	if err := os.WriteFile(path, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, func(c *Config) { c.Loads = []Load{{List: "big", Path: path}} })
	reloader, reader := startOnRedis(t, srv.URL(), cfg), startOnRedis(t, srv.URL(), cfg)
	reloader.srv.LoadAtStartup(t.Context())

	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				reader.do(t, http.MethodGet, "/sts/READ?FILENAME=big&LEASE=300&FORMAT=JSON", "", "")
			}
		})
	}
	for range 3 {
		a := reloader.do(t, http.MethodGet, "/sts/RELOAD?FILENAME=big", "", "")
		reloader.checkCommandAnswer(t, "RELOAD", a)
	}
	close(stop)
	readers.Wait()
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "the leases to run out", func() bool {
		return reader.listStatus(t, "big").Leased == 0
	})
	got := reader.lines(t, "big")
	seen := make(map[string]bool, len(got))
	for _, line := range got {
		if seen[line] {
			t.Fatalf("%s is in the list twice after the reloads", line)
		}
		seen[line] = true
	}
	if len(got) != lines {
		t.Fatalf("%d lines after the leases ran out, want the %d reloaded", len(got), lines)
	}
}
