package sts

import (
	"net/http"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The keys that sit beside a list in Redis (its unique index, leases, dead letters, staging
// lists) are anyone's to break with redis-cli. A key of the wrong type stops a change before
// its first write, so that a KO means that nothing changed; a missing one is repaired.

func TestACompanionKeyOfTheWrongTypeStopsAChangeBeforeItWrites(t *testing.T) {
	srv := redistest.Start(t)
	ts := startOnRedis(t, srv.URL(), testConfig(t))
	set := func(key, value string) {
		t.Helper()
		if _, err := srv.Do("SET", key, value); err != nil {
			t.Fatal(err)
		}
	}

	// LOAD REPLACE renamed the staging list over the list before it met the leases' string.
	ts.loadList(t, "r", "x", "y")
	set("sts:{r}:leases", "oops")
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=r&MODE=REPLACE&FORMAT=JSON", "text/plain", "new\n"); a.status != http.StatusInternalServerError {
		t.Errorf("LOAD REPLACE with a string leases key: %d %s, want a 500", a.status, a.body)
	}
	ts.checkLines(t, "r", "x", "y")

	// READ popped the last line before unindexing it met the dead letters' string.
	ts.expect(t, "/sts/ADD?FILENAME=u&LINE=only&UNIQUE=TRUE", okBody(""))
	set("sts:{u}:dead", "oops")
	if a, js := ts.getAnswer(t, "/sts/READ?FILENAME=u&KEEP=FALSE&FORMAT=JSON"); a.status != http.StatusInternalServerError || js.Reason != protocol.ReasonIO {
		t.Errorf("READ with a string dead-letter key: %d %s, want a 500", a.status, a.body)
	}
	ts.checkLines(t, "u", "only")
}

// A lease's entry deleted by hand (DEL of the leases hash, or an evicting maxmemory policy) took
// its lines with it: its expiry is forgotten, instead of failing every leased READ of the list,
// and the expiry loop, for ever.
func TestALeaseWhoseEntryIsGoneIsForgotten(t *testing.T) {
	srv := redistest.Start(t)
	ts := startOnRedis(t, srv.URL(), testConfig(t))
	ts.loadList(t, "l", "a", "b", "c")
	if a, _ := ts.getAnswer(t, "/sts/READ?FILENAME=l&LEASE=50&FORMAT=JSON"); a.status != http.StatusOK {
		t.Fatalf("leased READ: %d %s", a.status, a.body)
	}
	if _, err := srv.Do("DEL", "sts:{l}:leases"); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, 10*time.Second, 20*time.Millisecond, "the lost lease's expiry to be forgotten", func() bool {
		n, err := srv.Do("ZCARD", "sts:{l}:expires")
		return err == nil && n == int64(0)
	})
	for _, line := range []string{"b", "c"} {
		if a, js := ts.getAnswer(t, "/sts/READ?FILENAME=l&LEASE=60000&FORMAT=JSON"); a.status != http.StatusOK || *js.Value != line {
			t.Fatalf("leased READ after the lost lease: %d %s, want %s", a.status, a.body, line)
		}
	}
}
