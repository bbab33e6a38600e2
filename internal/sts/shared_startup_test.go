package sts

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/sts/store/redis/redisstoretest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// startOnRedis starts a server of cfg whose lists live in the Redis at url, listening but not
// loaded yet (LoadAtStartup is the test's to call), as the sts command starts one with
// --redis-url.
func startOnRedis(t *testing.T, url string, cfg Config) *testServer {
	t.Helper()
	log := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	st := redisstoretest.Open(t, url, redisstore.Options{HealthInterval: 50 * time.Millisecond, Log: logger})
	server, err := NewServer(cfg, st, logger)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: server, store: st, log: log, cfg: cfg, dir: cfg.DatasetDir}
	ts.listen(t)
	return ts
}

// A server that starts beside a Redis already holding a list keeps the list as it is, whatever
// its startup file says: a replaced pod whose ConfigMap changed meanwhile must not hand out the
// consumed lines again. A list new to Redis is loaded; among the server's own sources a later one
// still replaces an earlier one; LOAD MODE=REPLACE is how the changed file gets in.
func TestStartupKeepsTheListsRedisHolds(t *testing.T) {
	srv := redistest.Start(t)
	files := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(files, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	v1 := write("users-v1.csv", "u1\nu2\nu3\n")
	v2 := write("users-v2.csv", "v2-a\nv2-b\n")
	fresh := write("fresh.csv", "f1\nf2\n")
	dupDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dupDir, "dup"), []byte("from-dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dupLater := write("dup-later.csv", "later-1\nlater-2\n")

	first := startOnRedis(t, srv.URL(), testConfig(t, func(c *Config) {
		c.Loads = []Load{{List: "users", Path: v1}}
	}))
	first.srv.LoadAtStartup(context.Background())
	first.expect(t, "/sts/READ?FILENAME=users&KEEP=FALSE", okBody("u1"))
	first.expect(t, "/sts/ADD?FILENAME=added&LINE=a", okBody(""))

	second := startOnRedis(t, srv.URL(), testConfig(t, func(c *Config) {
		c.InitFiles = "added"
		c.LoadDirs = []LoadDir{{Dir: dupDir, Match: "dup"}}
		c.Loads = []Load{{List: "users", Path: v2}, {List: "fresh", Path: fresh}, {List: "dup", Path: dupLater}}
	}))
	second.writeFile(t, "added", "not-loaded\n")
	second.srv.LoadAtStartup(context.Background())

	want := map[string][]string{
		"users": {"u2", "u3"}, // neither u1 back nor v2 in
		"added": {"a"},        // a list a client created counts as held too
		"fresh": {"f1", "f2"},
		"dup":   {"later-1", "later-2"},
	}
	for name, lines := range want {
		if got := second.lines(t, name); !slices.Equal(got, lines) {
			t.Errorf("list %s: %q, want %q", name, got, lines)
		}
	}
	log := second.log.String()
	for _, want := range []string{
		`msg="Kept the list the store holds instead of loading it" list=users lines=2 source=` + v2,
		`msg="Kept the list the store holds instead of loading it" list=added lines=1`,
		`msg="Loaded list" list=fresh lines=2`,
		`msg="Loaded list" list=dup lines=1`,
		`msg="Loaded list" list=dup lines=2`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the second server's log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, `msg="Loaded list" list=users`) || strings.Contains(log, `msg="Loaded list" list=added`) {
		t.Errorf("the second server loaded a list Redis held:\n%s", log)
	}
	if failures := second.srv.startupFailures(); len(failures) != 0 {
		t.Errorf("startup failures: %+v", failures)
	}

	// A restart of the first server, its file changed meanwhile, keeps the list too.
	write("users-v1.csv", "changed\n")
	again := startOnRedis(t, srv.URL(), first.cfg)
	again.srv.LoadAtStartup(context.Background())
	if got := again.lines(t, "users"); !slices.Equal(got, []string{"u2", "u3"}) {
		t.Errorf("after a restart with a changed file, users is %q", got)
	}

	// The changed file gets in only when a client asks for it.
	a := second.do(t, http.MethodPost, "/sts/LOAD?FILENAME=users&MODE=REPLACE", "text/plain", "v2-a\nv2-b\n")
	second.checkCommandAnswer(t, "LOAD", a)
	first.expect(t, "/sts/READ?FILENAME=users&KEEP=FALSE", okBody("v2-a"))
}

// A list a startup cannot look at (Redis refuses) is a load failure, not a load over it.
func TestStartupLoadFailsWhenTheStoreCannotSay(t *testing.T) {
	srv := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "users.csv")
	if err := os.WriteFile(path, []byte("u1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startOnRedis(t, srv.URL(), testConfig(t, func(c *Config) { c.Loads = []Load{{List: "users", Path: path}} }))
	// A list's meta hash beside a string where its lines should be: LENGTH fails (WRONGTYPE).
	for _, cmd := range [][]string{{"HSET", "sts:{users}:meta", "x", "1"}, {"SET", "sts:{users}", "a string"}} {
		if _, err := srv.Do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	ts.srv.LoadAtStartup(context.Background())
	failures := ts.srv.startupFailures()
	if len(failures) != 1 || failures[0].list != "users" || failures[0].source != path || !strings.Contains(failures[0].message, "holds a string, not a list") {
		t.Fatalf("startup failures: %+v", failures)
	}
	if got, err := srv.Do("GET", "sts:{users}"); err != nil || got != "a string" {
		t.Errorf("the key was changed: %v, %v", got, err)
	}
	// The store's health is polled every 50 ms; 10 s is for a loaded machine, not a figure.
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "/readyz 200", func() bool {
		return ts.rawGet(t, "/readyz").status == http.StatusOK
	})
}
