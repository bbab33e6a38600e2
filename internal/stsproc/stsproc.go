// Package stsproc builds and runs the sts binary for tests: its output collected, killed when
// the test ends, and told about through its HTTP endpoints. The binary's own tests (cmd/sts), the
// monitoring tests (test/monitoring), the fault campaign (test/faults) and the tests that drive it
// with real load generators (test/examples) share it.
//
// Under `go test -race` (make test), Build builds sts with the race detector as well, and a test
// whose server reported a data race fails: the process tests check the server's concurrency as the
// in-process tests check the handlers'.
package stsproc

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// Process is a running sts binary.
type Process struct {
	Base string           // http://127.0.0.1:port
	Logs *testutil.Buffer // what it printed, stdout and stderr
	Pid  int

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended
	err    error         // how it ended, once exited is closed
}

// raceWarning begins each report the race detector prints.
const raceWarning = "WARNING: DATA RACE"

// Build builds the Go package at pkg (a directory, e.g. "../../cmd/sts") into out: with the
// race detector when this test binary has it (Race), so that `go test -race` runs a server that
// reports its data races, which Start turns into test failures.
func Build(pkg, out string) error {
	return build(pkg, out, Race)
}

// BuildWithoutRace builds pkg into out without the race detector, whatever the test binary's
// build. For the tests that measure the server's memory (RSS): the race detector's shadow memory
// and its bookkeeping of every goroutine take 5 to 10 times what the server itself holds.
func BuildWithoutRace(pkg, out string) error {
	return build(pkg, out, false)
}

func build(pkg, out string, race bool) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	if b, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}

// Start runs binary with args, which must make it listen on 127.0.0.1:port, and an empty
// environment (no STS_* variable of the test's). It does not wait for the server to be ready.
// When the test ends the process is killed, and its output logged if the test failed. A binary
// built with the race detector (Build under go test -race) runs on: the test fails when the
// test ends if the server printed a data race report.
func Start(t testing.TB, binary string, port int, args ...string) *Process {
	t.Helper()
	p := &Process{Base: "http://127.0.0.1:" + strconv.Itoa(port), Logs: &testutil.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.Logs, p.Logs
	// The race detector's settings, for a binary built with it (others ignore them): each report
	// printed as it is found, the server going on; a stopped server exits with status 66 if it
	// reported one.
	p.cmd.Env = []string{"GORACE=halt_on_error=0 exitcode=66"}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.Pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if logs := p.Logs.String(); strings.Contains(logs, raceWarning) {
			t.Errorf("sts %v reported a data race (built with -race):\n%s", args, logs)
		} else if t.Failed() {
			t.Logf("sts %v printed:\n%s", args, logs)
		}
	})
	return p
}

// Status is the HTTP status of a GET of path, or 0 if there is no answer.
func (p *Process) Status(path string) int {
	resp, err := http.Get(p.Base + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// WaitReady waits until /readyz answers 200, and fails t if the process ends first or takes
// more than 30 seconds.
func (p *Process) WaitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.Status("/readyz") != http.StatusOK {
		select {
		case <-p.exited:
			t.Fatalf("the server exited before it was ready: %v\n%s", p.err, p.Logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not become ready\n%s", p.Logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitCode waits up to within for the process to end and returns its exit status: 66 for a
// server built with the race detector that reported a data race (Start's test fails as well).
func (p *Process) ExitCode(t testing.TB, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("the server did not exit within %v\n%s", within, p.Logs)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Export returns a list's lines, read with EXPORT.
func (p *Process) Export(t testing.TB, list string) []string {
	t.Helper()
	resp, err := http.Get(p.Base + "/sts/EXPORT?FILENAME=" + url.QueryEscape(list))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("EXPORT %s: %d %q, %v", list, resp.StatusCode, b, err)
	}
	text := strings.TrimSuffix(string(b), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// StablePort returns a loopback port that was free a moment ago, drawn below Linux's ephemeral
// range (32768 and up), from which the kernel takes the source port of every outgoing
// connection: a server killed and restarted on it finds it free again. FreePort's port, from that
// range, was taken by a connection in between on a machine busy with tests.
func StablePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 10000 + rand.IntN(22000)
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
