package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// launch starts the binary on 127.0.0.1:port without waiting for it: built with the race
// detector under go test -race.
func launch(t *testing.T, port int, args ...string) *stsproc.Process {
	t.Helper()
	return stsproc.Start(t, binary, port, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)...)
}

// launchWithoutRace starts the binary built without the race detector, whatever the tests'
// build, on 127.0.0.1:port without waiting for it: for the tests that measure the server's
// memory (RSS), which the race detector multiplies 5 to 10 times. Their concurrency is checked by
// the tests that run the race-enabled binary.
func launchWithoutRace(t *testing.T, port int, args ...string) *stsproc.Process {
	t.Helper()
	plain, err := binaryWithoutRace()
	if err != nil {
		t.Fatal(err)
	}
	return stsproc.Start(t, plain, port, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)...)
}

// rawClient is a minimal HTTP/1.1 client on one keep-alive connection: it costs the test far
// less CPU than net/http, and it says whether a failed request had been sent.
type rawClient struct {
	addr   string
	conn   net.Conn
	r      *bufio.Reader
	header http.Header // of the last answer
}

// get sends a GET of target and returns the answer's status and body. sent reports, when it
// fails, whether the whole request had been written: it may then have been executed.
func (c *rawClient) get(target string) (status int, body string, sent bool, err error) {
	if c.conn == nil {
		if c.conn, err = net.DialTimeout("tcp", c.addr, 2*time.Second); err != nil {
			return 0, "", false, err
		}
		c.r = bufio.NewReader(c.conn)
	}
	defer func() {
		if err != nil {
			c.conn.Close()
			c.conn = nil
		}
	}()
	_ = c.conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err = io.WriteString(c.conn, "GET "+target+" HTTP/1.1\r\nHost: sts\r\n\r\n"); err != nil {
		return 0, "", false, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, "", true, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, "", true, err
	}
	c.header = resp.Header
	return resp.StatusCode, string(b), true, nil
}

// A token file replaced in place, as the kubelet replaces a mounted Secret, gives the running
// server the new token: the old one is refused from then on. A file that turns empty or
// unreadable keeps the token in force, and is read again until it is readable.
func TestRotatedTokenFileNeedsNoRestart(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	replace := func(content string) { // write aside and rename over, as the kubelet does
		t.Helper()
		tmp := filepath.Join(dir, "token.tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, tokenFile); err != nil {
			t.Fatal(err)
		}
	}
	replace("first\n")
	srv := launch(t, stsproc.FreePort(t), "--auth-token-file", tokenFile)
	srv.WaitReady(t)
	if got := srv.Status("/sts/STATUS?TOKEN=first"); got != http.StatusOK {
		t.Fatalf("the first token: HTTP %d", got)
	}
	replace("second\n")
	testutil.Until(t, 20*time.Second, 50*time.Millisecond, "the new token accepted", func() bool {
		return srv.Status("/sts/STATUS?TOKEN=second") == http.StatusOK
	})
	if got := srv.Status("/sts/STATUS?TOKEN=first"); got != http.StatusUnauthorized {
		t.Errorf("the old token after the rotation: HTTP %d, want 401", got)
	}
	replace(" \n")
	testutil.Until(t, 20*time.Second, 50*time.Millisecond, "the empty file logged", func() bool {
		return strings.Contains(srv.Logs.String(), "Keeping the current auth token")
	})
	if got := srv.Status("/sts/STATUS?TOKEN=second"); got != http.StatusOK {
		t.Errorf("the token in force after the file emptied: HTTP %d, want 200", got)
	}
	if got := srv.Status("/sts/STATUS"); got != http.StatusUnauthorized {
		t.Errorf("no token after the file emptied: HTTP %d, want 401", got)
	}
	// A directory where the file was cannot be read, by root too.
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tokenFile, 0o700); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 20*time.Second, 50*time.Millisecond, "the unreadable file logged", func() bool {
		return strings.Contains(srv.Logs.String(), "is a directory")
	})
	if got := srv.Status("/sts/STATUS?TOKEN=second"); got != http.StatusOK {
		t.Errorf("the token in force after the file turned unreadable: HTTP %d, want 200", got)
	}
	if got := srv.Status("/sts/STATUS"); got != http.StatusUnauthorized {
		t.Errorf("no token after the file turned unreadable: HTTP %d, want 401", got)
	}
	// And the file readable again is taken: the watch went on.
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	replace("third\n")
	testutil.Until(t, 20*time.Second, 50*time.Millisecond, "the token of the file readable again accepted", func() bool {
		return srv.Status("/sts/STATUS?TOKEN=third") == http.StatusOK
	})
}
