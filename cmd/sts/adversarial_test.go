package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The hostile-input tests of the binary are named TestAdversarial*: `make adversarial` runs them
// verbosely and prints their figures; they run in `make test` too.

// procStatusKiB reads a field of /proc/<pid>/status given in kB (VmRSS, VmHWM), in bytes.
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		testutil.Skip(t, "no /proc to measure the process' memory with: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s in /proc/%d/status: %q", field, pid, line)
			}
			return kib << 10
		}
	}
	testutil.Skip(t, "no %s in /proc/%d/status", field, pid)
	return 0
}

// TestAdversarialUnauthenticatedBodies sends 32 concurrent unauthenticated 16 MiB POSTs,
// percent-encoded throughout (a url-encoded form, a multipart form, a bulk LOAD), to a server
// that asks for a token: each is refused with 401 without its body being read (beyond the
// 64 KiB of a form that could hold a TOKEN field), so the process' peak RSS stays within 100 MB
// of its idle RSS.
func TestAdversarialUnauthenticatedBodies(t *testing.T) {
	const (
		clients   = 32
		bodyBytes = 16 << 20 // the default --max-body-bytes: the largest body a server accepts
		maxGrowth = 100e6    // bytes
	)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := launchWithoutRace(t, stsproc.FreePort(t), "--auth-token-file", tokenFile) // measures RSS
	srv.WaitReady(t)
	if got := srv.Status("/sts/STATUS"); got != http.StatusUnauthorized {
		t.Fatalf("STATUS without a token: HTTP %d, want 401", got)
	}
	addr := strings.TrimPrefix(srv.Base, "http://")
	escapes := bytes.Repeat([]byte("%41"), bodyBytes/3+1)
	for _, kind := range []struct{ name, target, contentType, start string }{
		// Escapes are the costliest to decode: "FILENAME=l&LINE=%41%41...".
		{"form", "/sts/ADD", "application/x-www-form-urlencoded", "FILENAME=l&LINE="},
		{"multipart", "/sts/ADD", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"LINE\"\r\n\r\n"},
		{"LOAD", "/sts/LOAD?FILENAME=l", "text/plain", ""},
	} {
		body := append([]byte(kind.start), escapes[:bodyBytes-len(kind.start)]...)
		head := "POST " + kind.target + " HTTP/1.1\r\nHost: sts\r\nContent-Type: " + kind.contentType + "\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
		// Reset the peak (VmHWM) to the current RSS, so that it measures these requests only.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", srv.Pid), []byte("5"), 0); err != nil {
			t.Logf("clear_refs: %v (the peak then includes what came before)", err)
		}
		idle := procStatusKiB(t, srv.Pid, "VmRSS")
		start := time.Now()
		statuses := make([]string, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() { statuses[i] = unauthenticatedPost(addr, head, body) })
		}
		wg.Wait()
		elapsed := time.Since(start)
		peak := procStatusKiB(t, srv.Pid, "VmHWM")
		after := procStatusKiB(t, srv.Pid, "VmRSS")

		const mb = 1e6
		t.Logf("%s: %d unauthenticated POSTs of %d MiB in %v: idle RSS %.1f MB, peak RSS %.1f MB (+%.1f MB, %.2fx idle), RSS after %.1f MB",
			kind.name, clients, bodyBytes>>20, elapsed.Round(time.Millisecond), float64(idle)/mb, float64(peak)/mb, float64(peak-idle)/mb,
			float64(peak)/float64(idle), float64(after)/mb)
		for i, s := range statuses {
			if s != "401" {
				t.Errorf("%s, client %d: %s, want HTTP 401", kind.name, i, s)
			}
		}
		if peak-idle > maxGrowth {
			t.Errorf("%s: peak RSS %.1f MB is %.1f MB above idle, more than %.0f MB", kind.name, float64(peak)/mb, float64(peak-idle)/mb, maxGrowth/mb)
		}
	}
	select {
	case <-srv.Exited():
		t.Fatalf("the server exited under the attack\n%s", srv.Logs)
	default:
	}
	if got := srv.Status("/sts/STATUS?TOKEN=s3cret"); got != http.StatusOK {
		t.Errorf("STATUS with the token after the attack: HTTP %d", got)
	}
}

// unauthenticatedPost sends head and body on a connection of its own, reading the answer while
// it writes (the server may answer, and close, before the body is sent), and returns the status
// code or what went wrong.
func unauthenticatedPost(addr, head string, body []byte) string {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	go func() {
		// A write error is expected once the server has refused the request and closed.
		_, _ = io.Copy(conn, io.MultiReader(strings.NewReader(head), bytes.NewReader(body)))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "no answer: " + err.Error()
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}
