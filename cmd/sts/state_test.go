package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestSecondServerRefusesTheStateDir starts two servers on one state directory: the second exits
// naming the first's process, and with --state-dir-wait it waits (healthy, not ready), then takes
// over once the first has stopped, with its lists.
func TestSecondServerRefusesTheStateDir(t *testing.T) {
	state := t.TempDir()
	first := launch(t, stsproc.FreePort(t), "--state-dir", state)
	first.WaitReady(t)
	if got := getBody(t, first.Base+"/sts/ADD?FILENAME=l&LINE=from-the-first"); got != testutil.OKBody("") {
		t.Fatalf("ADD: %q", got)
	}

	second := launch(t, stsproc.FreePort(t), "--state-dir", state)
	if code := second.ExitCode(t, 15*time.Second); code != 1 {
		t.Fatalf("the second server exited with %d, want 1\n%s", code, second.Logs)
	}
	want := fmt.Sprintf("is in use by another server (pid %d on ", first.Pid)
	if logs := second.Logs.String(); !strings.Contains(logs, want) || !strings.Contains(logs, "--state-dir-wait") {
		t.Errorf("the refusal does not name the holder's pid %d:\n%s", first.Pid, logs)
	}

	waiting := launch(t, stsproc.FreePort(t), "--state-dir", state, "--state-dir-wait")
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "the waiting server saying it waits", func() bool {
		return strings.Contains(waiting.Logs.String(), "Waiting for the state directory")
	})
	if got := waiting.Status("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz of the waiting server: %d", got)
	}
	if got := waiting.Status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz of the waiting server: %d", got)
	}
	if got := waiting.Status("/sts/LENGTH?FILENAME=l"); got != http.StatusServiceUnavailable {
		t.Errorf("a command on the waiting server: %d", got)
	}
	first.Signal(t, syscall.SIGTERM)
	if code := first.ExitCode(t, 15*time.Second); code != 0 {
		t.Fatalf("the first server exited with %d\n%s", code, first.Logs)
	}
	waiting.WaitReady(t)
	if got := waiting.Export(t, "l"); !slices.Equal(got, []string{"from-the-first"}) {
		t.Errorf("the list after the takeover: %q", got)
	}
	if n := strings.Count(waiting.Logs.String(), "Waiting for the state directory"); n != 1 {
		t.Errorf("the wait was logged %d times in a few seconds, want once", n)
	}
}

// TestDamagedStateRefusesToStart damages the middle of the journal: the server must exit, naming
// the file and the offset, instead of serving lists that may be wrong.
func TestDamagedStateRefusesToStart(t *testing.T) {
	state := t.TempDir()
	srv := launch(t, stsproc.FreePort(t), "--state-dir", state)
	srv.WaitReady(t)
	for i := range 50 {
		getBody(t, fmt.Sprintf("%s/sts/ADD?FILENAME=l&LINE=line%d", srv.Base, i))
	}
	srv.Signal(t, syscall.SIGTERM)
	if code := srv.ExitCode(t, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d\n%s", code, srv.Logs)
	}
	segments, _ := filepath.Glob(filepath.Join(state, "journal-*.log"))
	if len(segments) != 1 {
		t.Fatalf("journal segments: %v", segments)
	}
	data, err := os.ReadFile(segments[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(segments[0], data, 0o640); err != nil {
		t.Fatal(err)
	}
	broken := launch(t, stsproc.FreePort(t), "--state-dir", state)
	if code := broken.ExitCode(t, 15*time.Second); code != 1 {
		t.Fatalf("exit status %d on a damaged journal, want 1\n%s", code, broken.Logs)
	}
	if logs := broken.Logs.String(); !strings.Contains(logs, segments[0]+" is corrupt at byte offset ") {
		t.Errorf("the refusal does not name the file and offset:\n%s", logs)
	}
}

// TestSIGTERMAnswersWaitsAndKeepsTheState checks the graceful stop: a read waiting for a line is
// answered rather than cut, the process exits 0 in time, and a restart has every acknowledged
// change.
func TestSIGTERMAnswersWaitsAndKeepsTheState(t *testing.T) {
	state := t.TempDir()
	port := stsproc.FreePort(t)
	srv := launch(t, port, "--state-dir", state, "--fsync-policy", "interval", "--fsync-interval", "1s")
	srv.WaitReady(t)
	for i := range 20 {
		getBody(t, fmt.Sprintf("%s/sts/ADD?FILENAME=l&LINE=line%d&ADD_MODE=LAST", srv.Base, i))
	}
	waiting := make(chan string, 1)
	go func() { waiting <- getBody(t, srv.Base+"/sts/READ?FILENAME=empty&WAIT=30000") }()
	// The read must be waiting in the server before the signal, however slow the machine.
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the READ with WAIT waiting", func() bool {
		return strings.Contains(getBody(t, srv.Base+"/metrics"), "\nsts_waiting_reads 1\n")
	})
	start := time.Now()
	srv.Signal(t, syscall.SIGTERM)
	select {
	case got := <-waiting:
		if got != testutil.KOBody("empty not loaded yet !") {
			t.Errorf("the waiting read at SIGTERM: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting read was not answered")
	}
	if code := srv.ExitCode(t, 15*time.Second); code != 0 {
		t.Fatalf("exit status %d\n%s", code, srv.Logs)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the graceful stop took %v", took)
	}
	srv = launch(t, port, "--state-dir", state)
	srv.WaitReady(t)
	if got := srv.Export(t, "l"); len(got) != 20 || got[19] != "line19" {
		t.Errorf("after the restart: %q", got)
	}
}
