package sts

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// sendInBackground sends a GET in a goroutine, which sends its body (or its error) to done.
func (ts *testServer) sendInBackground(target string, done chan<- string) {
	go func() {
		resp, err := http.Get(ts.base + target)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
}

// background sends a GET in a goroutine and returns its body when asked.
func (ts *testServer) background(t *testing.T, target string) func() string {
	t.Helper()
	done := make(chan string, 1)
	ts.sendInBackground(target, done)
	return func() string {
		t.Helper()
		select {
		case body := <-done:
			return body
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not answer", target)
			return ""
		}
	}
}

// untilWaiting waits until n reads wait in the store.
func (ts *testServer) untilWaiting(t *testing.T, n int) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if w := ts.store.Waiting(); w != n {
			return fmt.Errorf("%d reads wait, want %d", w, n)
		}
		return nil
	})
}

// TestWaitingReadIsServedByEachProducer has a READ with WAIT wait on an empty list, and each way
// of bringing lines end the wait: ADD, LOAD, INITFILE.
func TestWaitingReadIsServedByEachProducer(t *testing.T) {
	for name, produce := range map[string]func(t *testing.T, ts *testServer){
		"ADD": func(t *testing.T, ts *testServer) { ts.expect(t, "/sts/ADD?FILENAME=q&LINE=first", okBody("")) },
		"LOAD": func(t *testing.T, ts *testServer) {
			if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=q&MODE=LAST", "text/plain", "first\nsecond\n"); a.body != okBody("2") {
				t.Fatalf("LOAD: %q", a.body)
			}
		},
		"INITFILE": func(t *testing.T, ts *testServer) { ts.loadList(t, "q", "first", "second") },
	} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t)
			answer := ts.background(t, "/sts/READ?FILENAME=q&KEEP=FALSE&WAIT=10000")
			ts.untilWaiting(t, 1)
			produce(t, ts)
			if got := answer(); got != okBody("first") {
				t.Fatalf("the waiting READ got %q", got)
			}
		})
	}
}

// TestWaitingReadsAreServedInArrivalOrder queues reads one after the other, then adds lines: the
// i-th read must get the i-th line.
func TestWaitingReadsAreServedInArrivalOrder(t *testing.T) {
	requireMemory(t, "reads waiting on several servers sharing Redis are served by whichever tries first")
	const readers = 12
	ts := startServer(t)
	ts.expect(t, "/sts/ADD?FILENAME=fifo&LINE=x", okBody(""))
	ts.expect(t, "/sts/READ?FILENAME=fifo&KEEP=FALSE", okBody("x"))
	var answers []func() string
	for i := range readers {
		answers = append(answers, ts.background(t, "/sts/READ?FILENAME=fifo&KEEP=FALSE&WAIT=20000"))
		ts.untilWaiting(t, i+1)
	}
	for i := range readers {
		ts.expect(t, fmt.Sprintf("/sts/ADD?FILENAME=fifo&LINE=line%d&ADD_MODE=LAST", i), okBody(""))
	}
	for i, answer := range answers {
		if got := answer(); got != okBody(fmt.Sprintf("line%d", i)) {
			t.Errorf("reader %d got %q", i, got)
		}
	}
}

// TestWaitEndsWithTheUsualAnswer checks that a wait that ends without lines answers what the
// command answers without WAIT, after the wait; a bad parameter is answered at once, on a list
// that a READ would wait for.
func TestWaitEndsWithTheUsualAnswer(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "one", "only")
	for target, want := range map[string]string{
		"/sts/READ?FILENAME=nope&WAIT=150":                          koBody("nope not loaded yet !"),
		"/sts/READMULTI?FILENAME=one&NB_LINES=2&WAIT=150":           koBody("Number lines to read greater than file size, 2 greater than 1 !"),
		"/sts/FIND?FILENAME=one&LINE=zz&WAIT=150":                   koBody("Not find !"),
		"/sts/READ?FILENAME=nope&KEEP=FALSE&WAIT=20000&READ_MODE=X": koBody("READ_MODE value has to be FIRST, LAST or RANDOM !"),
	} {
		start := time.Now()
		ts.expect(t, target, want)
		took := time.Since(start)
		if strings.Contains(target, "READ_MODE=X") {
			// Its wait is 20 s: half of it tells a wait from a loaded machine's slowness.
			if took > 10*time.Second {
				t.Errorf("%s: a bad parameter waited %v", target, took)
			}
		} else if took < 150*time.Millisecond {
			t.Errorf("%s: answered after %v, before its wait", target, took)
		}
	}
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\none = 1<br />\n</body></html>") // nope was not created
}

func TestWaitIsCappedByMaxWait(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxWait = 100 * time.Millisecond })
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=x", okBody(""))
	ts.expect(t, "/sts/READ?FILENAME=l&KEEP=FALSE", okBody("x"))
	start := time.Now()
	ts.expect(t, "/sts/READ?FILENAME=l&WAIT=2147483647", koBody("No more line !"))
	if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
		t.Errorf("a WAIT over the cap answered after %v, want about 100ms", took)
	}
	off := startServer(t, func(c *Config) { c.MaxWait = 0 })
	start = time.Now()
	off.expect(t, "/sts/READ?FILENAME=l&WAIT=5000", koBody("l not loaded yet !"))
	if took := time.Since(start); took > time.Second {
		t.Errorf("with waiting off, a WAIT answered after %v", took)
	}
}

func TestBadWaitValues(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "l", "a")
	want := koBody("WAIT value has to be a number of milliseconds from 0 to 2147483647 !")
	for _, wait := range []string{"-1", "abc", "1e99", "", "2147483648", "99999999999999999999999", "%2B5", "5%20", "1.5"} {
		for _, command := range []string{"READ", "READMULTI", "FIND"} {
			ts.expect(t, "/sts/"+command+"?FILENAME=l&NB_LINES=1&LINE=a&WAIT="+wait, want)
		}
	}
	if status, m := ts.getJSON(t, "/sts/READ?FILENAME=l&WAIT=-1", true); status != http.StatusBadRequest || m["reason"] != "invalid_parameter" {
		t.Errorf("JSON: %d %v", status, m)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=l", okBody("1")) // nothing was read
	ts.expect(t, "/sts/READ?FILENAME=l&WAIT=0&KEEP=FALSE", okBody("a"))
}

// TestWaitEndsWhenTheClientLeaves closes the connection of a waiting read: the read must leave
// the queue and take nothing.
func TestWaitEndsWhenTheClientLeaves(t *testing.T) {
	ts := startServer(t)
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /sts/READ?FILENAME=gone&KEEP=FALSE&WAIT=60000 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	ts.untilWaiting(t, 1)
	conn.Close()
	ts.untilWaiting(t, 0)
	ts.expect(t, "/sts/ADD?FILENAME=gone&LINE=kept", okBody(""))
	ts.expect(t, "/sts/LENGTH?FILENAME=gone", okBody("1"))
}

// TestDrainEndsWaitsAndRefusesCommands checks the start of a graceful stop.
func TestDrainEndsWaitsAndRefusesCommands(t *testing.T) {
	ts := startServer(t)
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=x", okBody(""))
	ts.expect(t, "/sts/READ?FILENAME=l&KEEP=FALSE", okBody("x"))
	answer := ts.background(t, "/sts/READ?FILENAME=l&WAIT=60000")
	ts.untilWaiting(t, 1)
	ts.srv.Drain()
	if got := answer(); got != koBody("No more line !") {
		t.Errorf("a waiting read at the stop: %q", got)
	}
	if a := ts.do(t, http.MethodGet, "/sts/ADD?FILENAME=l&LINE=late", "", ""); a.status != http.StatusServiceUnavailable || a.body != koBody("Server is stopping !") {
		t.Errorf("a command while stopping: %d %q", a.status, a.body)
	}
	if a := ts.do(t, http.MethodGet, "/readyz", "", ""); a.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while stopping: %d", a.status)
	}
	if a := ts.do(t, http.MethodGet, "/healthz", "", ""); a.status != http.StatusOK {
		t.Errorf("/healthz while stopping: %d", a.status)
	}
	if n, _ := ts.store.Length(context.Background(), "l"); n != 0 {
		t.Errorf("the refused ADD added a line")
	}
}
