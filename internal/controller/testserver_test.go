package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// testTableServer is a real table server (internal/sts) on a loopback port, standing in for a
// resource's pod: the test puts the lists there that the pod would have loaded at startup.
type testTableServer struct {
	url   string
	srv   *sts.Server
	cfg   sts.Config
	store store.Store
	// loads, statuses and reloads count the LOAD, STATUS and RELOAD requests the server received.
	loads, statuses, reloads atomic.Int64
}

// startTableServer serves lists on 127.0.0.1 until t ends; with a token every request must
// carry it. configure, if any, changes the server's configuration.
func startTableServer(t testing.TB, token string, lists map[string][]string, configure ...func(*sts.Config)) *testTableServer {
	t.Helper()
	return startTableServerOn(t, memory.New(), token, lists, configure...)
}

// startTableServerOn is startTableServer with the lists in st.
func startTableServerOn(t testing.TB, st store.Store, token string, lists map[string][]string, configure ...func(*sts.Config)) *testTableServer {
	t.Helper()
	ts := &testTableServer{store: st}
	for name, lines := range lists {
		ts.store.Replace(context.Background(), name, lines, "")
	}
	cfg := sts.DefaultConfig()
	cfg.DatasetDir = t.TempDir()
	cfg.AuthToken = token
	cfg.AllowStop = false
	for _, c := range configure {
		c(&cfg)
	}
	ts.cfg = cfg
	srv, err := sts.NewServer(cfg, ts.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("table server: %v", err)
	}
	srv.LoadAtStartup(context.Background()) // what cfg names to load, as the pod's server does before it is ready
	ts.srv = srv
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sts/LOAD":
			ts.loads.Add(1)
		case "/sts/STATUS":
			ts.statuses.Add(1)
		case "/sts/RELOAD":
			ts.reloads.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ts.url = hs.URL
	return ts
}

// loadDataset replaces a list with content as a server's startup load of a dataset file does:
// STATUS then reports the content's digest for the list.
func (ts *testTableServer) loadDataset(t testing.TB, list, content string) {
	t.Helper()
	digest := sha256.Sum256([]byte(content))
	target := ts.url + "/sts/LOAD?FILENAME=" + url.QueryEscape(list) + "&SHA256=" + hex.EncodeToString(digest[:])
	resp, err := http.Post(target, "text/plain", strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("LOAD %s: HTTP %d", list, resp.StatusCode)
	}
}

// waitPolls waits until the operator has asked the server for STATUS n more times: a check that
// something did not happen (no write, no LOAD) then spans n polls, however slow the machine.
func (ts *testTableServer) waitPolls(t testing.TB, n int64) {
	t.Helper()
	until := ts.statuses.Load() + n
	testutil.Until(t, time.Duration(n)*reconcileWait, 10*time.Millisecond, fmt.Sprintf("%d more polls", n), func() bool {
		return ts.statuses.Load() >= until
	})
}

// length is the list's length in the server's store (-1 when it has no such list).
func (ts *testTableServer) length(name string) int {
	n, err := ts.store.Length(context.Background(), name)
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
