package sts

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHugeHeadIsRefusedOnce(t *testing.T) {
	ts := startServer(t)
	// The original re-executes a request whose head exceeds 8 KiB forever. Here a 64 KiB head
	// runs once and a larger one gets 431 without running.
	line := strings.Repeat("x", 60<<10)
	if a := ts.rawGet(t, "/sts/ADD?FILENAME=ok&LINE="+line); a.status != http.StatusOK || a.body != okBody("") {
		t.Fatalf("60 KiB ADD: %d %.100q", a.status, a.body)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=ok", okBody("1"))
	ts.expect(t, "/sts/READ?FILENAME=ok", okBody(line))

	huge := strings.Repeat("y", 100<<10)
	if a := ts.rawGet(t, "/sts/ADD?FILENAME=big&LINE="+huge); a.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB ADD: %d %.100q", a.status, a.body)
	}
	a := raw(t, ts.addr, "GET /sts/ADD?FILENAME=big&LINE=x HTTP/1.1\r\nHost: x\r\nX-Big: "+huge+"\r\n\r\n")
	if a.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB header: %d", a.status)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=big", koBody("big not loaded yet !"))
}

func TestTransportOddities(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "a.txt", "x")
	// Absolute-form targets are not converted to a path, as in the original.
	if a := ts.rawGet(t, "http://"+ts.addr+"/sts/LENGTH?FILENAME=a.txt"); a.body != koBody("unknown command !") {
		t.Errorf("absolute-form target: %d %q", a.status, a.body)
	}
	// No path cleaning: dot segments are part of the path.
	if a := ts.rawGet(t, "/sts/../sts/LENGTH?FILENAME=a.txt"); a.body != koBody("unknown command !") {
		t.Errorf("dot segments: %d %q", a.status, a.body)
	}
	// A raw NUL byte or a raw space in the target is refused by the transport, before any command.
	for _, target := range []string{"/sts/ADD?FILENAME=a.txt&LINE=a\x00b", "/sts/ADD?FILENAME=a.txt&LINE=yellow submarine"} {
		if a := ts.rawGet(t, target); a.status != http.StatusBadRequest {
			t.Errorf("%q: %d %q", target, a.status, a.body)
		}
	}
	// A bad Content-Length is a 400, not a dropped connection.
	a := raw(t, ts.addr, "POST /sts/ADD HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\nFILENAME=a.txt&LINE=y")
	if a.status != http.StatusBadRequest {
		t.Errorf("bad Content-Length: %d %q", a.status, a.body)
	}
	// HTTP/1.0 works.
	if a := raw(t, ts.addr, "GET /sts/LENGTH?FILENAME=a.txt HTTP/1.0\r\n\r\n"); a.body != okBody("1") {
		t.Errorf("HTTP/1.0: %d %q", a.status, a.body)
	}
	// "OPTIONS *" is an unknown command, as in the original.
	if a := raw(t, ts.addr, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"); a.body != koBody("unknown command !") {
		t.Errorf("OPTIONS *: %d %q", a.status, a.body)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=a.txt", okBody("1"))
}

func TestPipelinedKeepAlive(t *testing.T) {
	ts := startServer(t)
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reqs := []string{
		"GET /sts/ADD?FILENAME=p&LINE=1&ADD_MODE=LAST HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /sts/ADD?FILENAME=p&LINE=2&ADD_MODE=LAST HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /sts/READ?FILENAME=p&KEEP=FALSE HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /sts/READ?FILENAME=p&KEEP=FALSE HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	if _, err := io.WriteString(conn, strings.Join(reqs, "")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	for i, want := range []string{okBody(""), okBody(""), okBody("1"), okBody("2")} {
		if a := readAnswer(t, r, reqs[i]); a.body != want {
			t.Errorf("pipelined answer %d: %q, want %q", i, a.body, want)
		}
	}
}

func TestPathTraversalNames(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AddTimestamp = false })
	outside := filepath.Dir(ts.dir)
	for _, name := range []string{"..%2Fescaped", "..%5Cescaped", "%2E%2E", "%2Fetc%2Fpasswd", "C:escaped"} {
		ts.get(t, "/sts/ADD?FILENAME="+name+"&LINE=x")
		ts.expect(t, "/sts/SAVE?FILENAME="+name, koBody("Illegal character found !"))
		ts.expect(t, "/sts/INITFILE?FILENAME="+name, koBody("Illegal character found !"))
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was written outside the dataset directory: %v", err)
	}
}

func TestCatastrophicRegexAnswersQuickly(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.RegexTimeout = 100 * time.Millisecond })
	evil := strings.Repeat("a", 40) + "!"
	ts.loadList(t, "r.txt", evil, evil, evil, "aab")
	start := time.Now()
	ts.expect(t, "/sts/FIND?FILENAME=r.txt&LINE=(a%2B)%2Bb&FIND_MODE=REGEX_MATCH", koBody("Regex evaluation timed out !"))
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("a catastrophic regex took %v", elapsed)
	}
	// The list is unchanged and the server still answers.
	ts.expect(t, "/sts/LENGTH?FILENAME=r.txt", okBody("4"))
	ts.expect(t, "/sts/FIND?FILENAME=r.txt&LINE=aab&FIND_MODE=EQUALS", okBody("aab"))
}

// expectClosed waits until the server closes conn, reading and discarding what it sends.
func expectClosed(t *testing.T, conn net.Conn, within time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", within)
	}
}

func TestSlowAndIdleClientsAreDropped(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.ReadHeaderTimeout = 200 * time.Millisecond
		c.IdleTimeout = 200 * time.Millisecond
	})
	t.Run("slow head", func(t *testing.T) {
		conn, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /sts/ADD?FILENAME=slow&LINE=x HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, conn, 3*time.Second)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := "GET /sts/STATUS HTTP/1.1\r\nHost: x\r\n\r\n"
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		readAnswer(t, r, req)
		expectClosed(t, conn, 3*time.Second)
	})
	ts.expect(t, "/sts/LENGTH?FILENAME=slow", koBody("slow not loaded yet !"))
}

func TestHeadInAnyCaseSendsNoBody(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "months.csv", "Jan", "Feb", "Mar", "Apr", "May", "June")
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Each HEAD's answer is headers only, so the GET's answer follows it on the connection.
	reqs := []string{
		"head /sts/LENGTH?FILENAME=months.csv HTTP/1.1\r\nHost: x\r\n\r\n",
		"HeAd /sts/LENGTH?FILENAME=months.csv HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /sts/LENGTH?FILENAME=months.csv HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	if _, err := io.WriteString(conn, strings.Join(reqs, "")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	for _, req := range reqs[:2] {
		a := readAnswer(t, r, "HEAD"+req[4:]) // read as the HEAD it is: headers only
		if a.status != http.StatusOK || a.header.Get("Content-Length") != strconv.Itoa(len(okBody("6"))) {
			t.Errorf("%.4s: %d, Content-Length %q", req, a.status, a.header.Get("Content-Length"))
		}
	}
	if a := readAnswer(t, r, reqs[2]); a.body != okBody("6") {
		t.Errorf("GET after the HEADs: %d %q", a.status, a.body)
	}
}

func TestHeadLimitIsExactly64KiB(t *testing.T) {
	ts := startServer(t)
	// head returns a request head of exactly size bytes that adds a line to the list h.
	head := func(size int) string {
		start, end := "GET /sts/ADD?FILENAME=h&LINE=", " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
		return start + strings.Repeat("x", size-len(start)-len(end)) + end
	}
	if a := raw(t, ts.addr, head(MaxHeaderBytes)); a.status != http.StatusOK || a.body != okBody("") {
		t.Errorf("a head of %d bytes: %d %.100q", MaxHeaderBytes, a.status, a.body)
	}
	if a := raw(t, ts.addr, head(MaxHeaderBytes+1)); a.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a head of %d bytes: %d %.100q", MaxHeaderBytes+1, a.status, a.body)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=h", okBody("1"))
}
