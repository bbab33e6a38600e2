// Package testutil holds what the tests of several packages share: the lines they load, the
// original plugin's HTML bodies they expect, waiting for a condition by polling, skipping (which
// CI turns into failing), a buffer goroutines write a server's logs to while the test reads them
// (Buffer), and a benchmark's rate of calls over many goroutines (PerSecond). It is for tests
// only (internal/stsproc and the other packages that run servers for tests import it too); it
// imports nothing of the table server, so the table server's own tests use it too.
package testutil

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Numbered returns n lines prefix-000000, prefix-000001, ...: all different, sorted, and each
// naming its place, so that a test can say which line was lost, served twice or out of order.
// stsload's produce and fill write the same lines, which the e2e suite checks.
func Numbered(prefix string, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return lines
}

// File returns lines as the content of a dataset file: each line ended by "\n".
func File(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// The original's HTML bodies, written from the protocol's description rather than taken from the
// server's code, so that a test catches the server drifting from them.
const (
	okHead = "<html><title>OK</title>\n<body>"
	koHead = "<html><title>KO</title>\n<body>Error : "
	end    = "</body>\n</html>"
)

// OKBody is the body of an OK answer with text (a line, a length, or nothing).
func OKBody(text string) string { return okHead + text + end }

// KOBody is the body of a KO answer with the original's message.
func KOBody(message string) string { return koHead + message + end }

// OKLine returns the text of an OK body, and false for any other body.
func OKLine(body string) (string, bool) {
	text, ok := strings.CutPrefix(body, okHead)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(text, end)
}

// Eventually calls check every interval until it returns nil, and fails t with check's last
// error once timeout has passed. The interval is the caller's: a loopback server can be asked
// every millisecond, a cluster's API server is asked less often.
func Eventually(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// Until is Eventually for a condition with no error to tell: what names the state waited for
// ("the server ready"), for the failure message.
func Until(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, interval, func() error {
		if cond() {
			return nil
		}
		return errors.New("still not " + what)
	})
}

// FullAttacks is STS_ADVERSARIAL=1, which make adversarial sets: the hostile-input tests
// (TestAdversarial*) then run at the size of the issue that found them; make test runs them
// smaller, to stay fast.
var FullAttacks = os.Getenv("STS_ADVERSARIAL") == "1"

// requireAll is STS_REQUIRE_ALL=1, which CI sets (.ci/run): there a test that cannot run fails
// instead of skipping, so that a missing tool or a lost precondition does not pass for green.
var requireAll = os.Getenv("STS_REQUIRE_ALL") == "1"

// RequireAll reports whether STS_REQUIRE_ALL=1 holds, under which Skip fails.
func RequireAll() bool { return requireAll }

// Skip skips t because something it needs is missing (a tool, root, an environment variable);
// with STS_REQUIRE_ALL=1 it fails t instead. Every test skips through Skip or SkipWaived, never
// t.Skip, so that CI cannot go green on tests that did not run (TestNoSilentSkip checks).
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if requireAll {
		t.Fatalf("STS_REQUIRE_ALL=1: this test must run here, but would skip: %s", reason)
	}
	t.Skip(reason)
}

// A Waiver is a skip that CI may take: each is named here with why what it skips is covered.
type Waiver string

const (
	// MemoryOnly skips, on the Redis backend, a test of what only the memory store has (a
	// journal, an exact byte limit, one server's order of waiters): make test runs package sts
	// once per backend, and the memory run has the test.
	MemoryOnly Waiver = "memory-only"
	// X86Paths skips, on another architecture, a case whose expected file paths are x86_64
	// Debian's (/lib/x86_64-linux-gnu): the other cases check the same code with the host's.
	X86Paths Waiver = "x86_64-paths"
)

// SkipWaived skips t under waiver w, with STS_REQUIRE_ALL=1 too.
func SkipWaived(t testing.TB, w Waiver, format string, args ...any) {
	t.Helper()
	t.Skipf("%s (waiver %s)", fmt.Sprintf(format, args...), w)
}
