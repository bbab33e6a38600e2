package controllers

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// testTableServer is a real table server (internal/sts) on a loopback port, standing in for a
// resource's pod: the test puts the lists there that the pod would have loaded at startup.
type testTableServer struct {
	url   string
	srv   *sts.Server
	store store.Store
	// loads and statuses count the LOAD and STATUS requests the server received.
	loads, statuses atomic.Int64
}

// startTableServer serves lists on 127.0.0.1 until t ends; with a token every request must
// carry it. configure, if any, changes the server's configuration.
func startTableServer(t testing.TB, token string, lists map[string][]string, configure ...func(*sts.Config)) *testTableServer {
	t.Helper()
	ts := &testTableServer{store: store.NewMemory()}
	for name, lines := range lists {
		ts.store.Replace(name, lines)
	}
	cfg := sts.DefaultConfig()
	cfg.DatasetDir = t.TempDir()
	cfg.AuthToken = token
	cfg.AllowStop = false
	for _, c := range configure {
		c(&cfg)
	}
	srv, err := sts.NewServer(cfg, ts.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("table server: %v", err)
	}
	srv.LoadAtStartup() // what cfg names to load, as the pod's server does before it is ready
	ts.srv = srv
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sts/LOAD":
			ts.loads.Add(1)
		case "/sts/STATUS":
			ts.statuses.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ts.url = hs.URL
	return ts
}

// length is the list's length in the server's store (-1 when it has no such list).
func (ts *testTableServer) length(name string) int {
	n, err := ts.store.Length(name)
	if err != nil {
		return -1
	}
	return n
}

// call sends a protocol request as a JMeter client would and returns the body.
func (ts *testTableServer) call(t testing.TB, pathAndQuery string) string {
	t.Helper()
	resp, err := http.Get(ts.url + pathAndQuery)
	if err != nil {
		t.Fatalf("GET %s: %v", pathAndQuery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", pathAndQuery, err)
	}
	return string(b)
}
