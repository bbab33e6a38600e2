package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/syncbuf"
)

// process is a running sts binary.
type process struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:port
	logs   *syncbuf.Buffer
	exited chan struct{} // closed when the process has ended
	err    error         // its exit, once exited is closed
}

// launch starts the binary on port without waiting for it.
func launch(t *testing.T, port int, args ...string) *process {
	t.Helper()
	p := &process{base: "http://127.0.0.1:" + strconv.Itoa(port), logs: &syncbuf.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	p.cmd.Env = []string{}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// status is the HTTP status of a GET of path, or 0 if there is no answer.
func (p *process) status(path string) int {
	resp, err := http.Get(p.base + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits until /readyz answers 200.
func (p *process) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.status("/readyz") != http.StatusOK {
		select {
		case <-p.exited:
			t.Fatalf("the server exited before it was ready: %v\n%s", p.err, p.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not become ready\n%s", p.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitCode waits for the process to end and returns its exit status.
func (p *process) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("the server did not exit within %v\n%s", within, p.logs)
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

func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// rawClient is a minimal HTTP/1.1 client on one keep-alive connection: it costs the test far
// less CPU than net/http, and it says whether a failed request had been sent.
type rawClient struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
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
	return resp.StatusCode, string(b), true, nil
}

// okLine returns the line of an OK(line) body.
func okLine(body string) (string, bool) {
	line, ok := strings.CutPrefix(body, "<html><title>OK</title>\n<body>")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(line, "</body>\n</html>")
}

func koBody(m string) string {
	return "<html><title>KO</title>\n<body>Error : " + m + "</body>\n</html>"
}

// export returns a list's lines through EXPORT.
func (p *process) export(t *testing.T, list string) []string {
	t.Helper()
	resp, err := http.Get(p.base + "/sts/EXPORT?FILENAME=" + list)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("EXPORT %s: %d %q", list, resp.StatusCode, b)
	}
	text := strings.TrimSuffix(string(b), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

func fmtLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line-%06d\n", i)
	}
	return b.String()
}
