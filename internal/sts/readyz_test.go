package sts

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// /readyz says in its body why the server is not ready, with the 503 it always had: starting
// (the startup loads not done), stopping, or a shared backend that does not answer.
func TestReadyzSaysWhy(t *testing.T) {
	check := func(ts *testServer, status int, body string) {
		t.Helper()
		if a := ts.rawGet(t, "/readyz"); a.status != status || a.body != body {
			t.Errorf("/readyz: %d %q, want %d %q", a.status, a.body, status, body)
		}
	}
	ts := startServer(t)
	check(ts, http.StatusServiceUnavailable, "not ready: starting")
	ts.srv.LoadAtStartup(context.Background())
	check(ts, http.StatusOK, "ok")
	ts.srv.Drain()
	check(ts, http.StatusServiceUnavailable, "not ready: stopping")

	srv := redistest.Start(t)
	shared := startOnRedis(t, srv.URL(), testConfig(t))
	shared.srv.LoadAtStartup(context.Background())
	check(shared, http.StatusOK, "ok")
	srv.Stop()
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "/readyz 503", func() bool {
		return shared.rawGet(t, "/readyz").status == http.StatusServiceUnavailable
	})
	check(shared, http.StatusServiceUnavailable, "not ready: the redis backend does not answer")
}
