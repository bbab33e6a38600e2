package sts

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/journal"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/sts/store/redis/redisstoretest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The original's bodies, under the short names the many checks use.
var okBody, koBody = testutil.OKBody, testutil.KOBody

// testServer is a table server listening on a loopback port, with its dataset directory.
type testServer struct {
	srv     *Server
	store   store.Store
	mem     *memory.Memory   // the store, when the tests run on the memory backend
	journal *journal.Journal // nil unless started by startJournaledServer
	addr    string           // host:port
	base    string           // http://host:port
	dir     string
	cfg     Config
	log     *testutil.Buffer // what the server logged
}

// testConfig is the default configuration with a fresh dataset directory, adjusted by options.
func testConfig(t testing.TB, options ...func(*Config)) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DatasetDir = t.TempDir()
	for _, o := range options {
		o(&cfg)
	}
	return cfg
}

// startServer starts a server with a fresh dataset directory; options adjust the configuration.
func startServer(t testing.TB, options ...func(*Config)) *testServer {
	t.Helper()
	ts := newTestServer(t, testConfig(t, options...))
	ts.listen(t)
	return ts
}

// startJournaledServer starts a server whose store is restored from, and recorded in, a journal
// in stateDir, as the sts command does with --state-dir. It is ready once LoadAtStartup has run.
func startJournaledServer(t testing.TB, stateDir string, opts journal.Options, options ...func(*Config)) *testServer {
	t.Helper()
	requireMemory(t, "the journal is the memory backend's")
	ts := newTestServer(t, testConfig(t, append([]func(*Config){func(c *Config) { c.WaitForStartup = true }}, options...)...))
	opts.ObserveSync = ts.srv.Metrics().ObserveFsync
	j, err := journal.Open(context.Background(), stateDir, ts.mem, opts)
	if err != nil {
		t.Fatalf("journal.Open: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	ts.srv.Metrics().WatchJournal(j.Size)
	ts.journal = j
	ts.listen(t)
	return ts
}

// backend is the store the protocol tests run on: memory, or with STS_TEST_BACKEND=redis a
// real redis-server of the test's own (make test runs them both ways).
var backend = cmp.Or(os.Getenv("STS_TEST_BACKEND"), "memory")

// requireMemory skips a test of what only the memory backend has.
func requireMemory(t testing.TB, why string) {
	t.Helper()
	if backend != "memory" {
		testutil.SkipWaived(t, testutil.MemoryOnly, "memory backend only: %s", why)
	}
}

// newTestServer makes the server of cfg, with a store within its limits.
func newTestServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	log := &testutil.Buffer{}
	ts := &testServer{dir: cfg.DatasetDir, cfg: cfg, log: log}
	switch backend {
	case "memory":
		ts.mem = memory.New(memory.WithLimits(cfg.Limits))
		ts.store = ts.mem
	case "redis":
		if cfg.Limits.MaxTotalBytes > 0 {
			testutil.SkipWaived(t, testutil.MemoryOnly, "memory backend only: --max-total-bytes is Redis' maxmemory on Redis")
		}
		ts.store = redisstoretest.Open(t, redistest.Start(t).URL(), redisstore.Options{Limits: cfg.Limits})
	default:
		t.Fatalf("STS_TEST_BACKEND=%q: want memory or redis", backend)
	}
	srv, err := NewServer(cfg, ts.store, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ts.srv = srv
	return ts
}

// listen serves ts on a loopback port until the end of the test.
func (ts *testServer) listen(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := ts.srv.HTTPServer("")
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	ts.addr = ln.Addr().String()
	ts.base = "http://" + ts.addr
}

// answer is an HTTP response with its body read.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends a request built by the standard client; target is kept as written (path and query).
func (ts *testServer) do(t testing.TB, method, target, contentType, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, ts.base+target, strings.NewReader(body))
	if err != nil {
		t.Fatalf("request %s %q: %v", method, target, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %q: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %q: reading the body: %v", method, target, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// get sends a GET and returns the body of what must be a command answer: HTTP 200, text/html.
func (ts *testServer) get(t testing.TB, target string) string {
	t.Helper()
	a := ts.do(t, http.MethodGet, target, "", "")
	ts.checkCommandAnswer(t, target, a)
	return a.body
}

func (ts *testServer) checkCommandAnswer(t testing.TB, target string, a answer) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("%q: status %d, want 200 (body %q)", target, a.status, a.body)
	}
	if ct := a.header.Values("Content-Type"); len(ct) != 1 || ct[0] != "text/html; charset="+ts.cfg.CharsetResponse {
		t.Fatalf("%q: Content-Type %q, want one text/html; charset=%s", target, ct, ts.cfg.CharsetResponse)
	}
}

// expect sends a GET and checks the body.
func (ts *testServer) expect(t testing.TB, target, want string) {
	t.Helper()
	if got := ts.get(t, target); got != want {
		t.Errorf("GET %s\n got %q\nwant %q", target, got, want)
	}
}

// writeFile writes a file into the dataset directory.
func (ts *testServer) writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ts.dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadList writes lines as a file and loads it with INITFILE.
func (ts *testServer) loadList(t testing.TB, name string, lines ...string) {
	t.Helper()
	ts.writeFile(t, name, testutil.File(lines))
	ts.expect(t, "/sts/INITFILE?FILENAME="+name, okBody(strconv.Itoa(len(lines))))
}

// lines returns a list's content, read through the store the server uses.
func (ts *testServer) lines(t testing.TB, name string) []string {
	t.Helper()
	l, err := ts.store.Lines(context.Background(), name)
	if err != nil {
		t.Fatalf("list %q: %v", name, err)
	}
	return l
}

// raw sends bytes on a new connection and reads one response.
func raw(t testing.TB, addr, request string) answer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatalf("writing %q: %v", request, err)
	}
	return readAnswer(t, bufio.NewReader(conn), request)
}

func readAnswer(t testing.TB, r *bufio.Reader, request string) answer {
	t.Helper()
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(r, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("response to %.80q: %v", request, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("body of the response to %.80q: %v", request, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// rawGet sends "GET target" with the target's bytes untouched.
func (ts *testServer) rawGet(t testing.TB, target string) answer {
	t.Helper()
	return raw(t, ts.addr, "GET "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
}
