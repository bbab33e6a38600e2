package sts

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// A Redis that goes away makes the server not ready and its commands 503 with a KO that says
// why, in both forms; the server reconnects by itself when Redis is back, with the data Redis
// kept (an AOF here), and never stops.
func TestRedisOutageIsA503UntilItReturns(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	ts := startOnRedis(t, srv.URL(), testConfig(t))
	server, log := ts.srv, ts.log
	server.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=kept", okBody(""))

	srv.Stop()
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "/readyz 503", func() bool {
		return ts.rawGet(t, "/readyz").status == http.StatusServiceUnavailable
	})
	html := ts.rawGet(t, "/sts/READ?FILENAME=l")
	if html.status != http.StatusServiceUnavailable || html.body != koBody("Storage backend unavailable, retry later !") {
		t.Errorf("READ with Redis down: %d %q", html.status, html.body)
	}
	js := ts.rawGet(t, "/sts/LENGTH?FILENAME=l&FORMAT=JSON")
	if js.status != http.StatusServiceUnavailable || !strings.Contains(js.body, `"reason":"backend_unavailable"`) {
		t.Errorf("LENGTH (JSON) with Redis down: %d %s", js.status, js.body)
	}
	if !strings.Contains(log.String(), "Redis unreachable") {
		t.Errorf("the log does not say Redis is unreachable:\n%s", log)
	}

	srv.Restart(t)
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "/readyz 200", func() bool {
		return ts.rawGet(t, "/readyz").status == http.StatusOK
	})
	ts.expect(t, "/sts/READ?FILENAME=l&KEEP=FALSE", okBody("kept"))
}

// TestSilentRedisIsA503AtOnce: a Redis that accepts connections and answers nothing (a dropping
// firewall, a frozen host) makes the server not ready once its health check notices, and from
// then on commands are refused at once, instead of each waiting for its own dial and read
// timeouts (10 to 20 s before); they run again when Redis answers.
func TestSilentRedisIsA503AtOnce(t *testing.T) {
	srv := redistest.Start(t)
	ts := startOnRedis(t, srv.URL(), testConfig(t))
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=kept", okBody(""))

	srv.Freeze(t)
	testutil.Until(t, 15*time.Second, 20*time.Millisecond, "/readyz 503", func() bool {
		return ts.rawGet(t, "/readyz").status == http.StatusServiceUnavailable
	})
	client := &http.Client{Timeout: 2 * time.Second} // far below the timeouts a silent Redis costs
	resp, err := client.Get(ts.base + "/sts/READ?FILENAME=l&FORMAT=JSON")
	if err != nil {
		t.Fatalf("READ with Redis silent did not answer at once: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("READ with Redis silent: HTTP %d, want 503", resp.StatusCode)
	}

	srv.Thaw(t)
	testutil.Until(t, 15*time.Second, 20*time.Millisecond, "/readyz 200", func() bool {
		return ts.rawGet(t, "/readyz").status == http.StatusOK
	})
	ts.expect(t, "/sts/READ?FILENAME=l&KEEP=FALSE", okBody("kept"))
}
