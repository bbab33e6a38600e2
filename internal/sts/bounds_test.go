package sts

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestAdversarialDeadLettersStayWithinMaxLists replays the probe that grew 206 lists past
// --max-lists 5: a line leased with LEASE=1 MAX_DELIVERIES=1 again and again, through each list's
// dead letters in turn (r, r.dead, r.dead.dead, ...). The dead-letter list counts against the
// limit, made with the first lease that may need it, and the dead letters' own leases never
// dead-letter: the chain stops at r.dead, and a lease whose dead-letter list has no room is
// refused before it takes a line.
func TestAdversarialDeadLettersStayWithinMaxLists(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Limits.MaxLists = 3 })
	ts.expect(t, "/sts/ADD?FILENAME=r&LINE=poison", okBody(""))
	list := "r"
	for range 20 {
		a, js := ts.getAnswer(t, "/sts/READ?FILENAME="+list+"&LEASE=1&MAX_DELIVERIES=1&FORMAT=JSON")
		if !js.OK {
			t.Fatalf("leased READ of %s: %d %s", list, a.status, a.body)
		}
		dead := list + ".dead"
		if strings.HasSuffix(list, ".dead") {
			dead = list // its leases give the line back to it
		}
		testutil.Until(t, 10*time.Second, 5*time.Millisecond, "the line to reach "+dead, func() bool {
			return slices.Equal(ts.lines(t, dead), []string{"poison"})
		})
		list = dead
	}
	if got := ts.listNames(t); strings.Join(got, ",") != "r,r.dead" {
		t.Fatalf("lists after 20 rounds: %q, want r and r.dead", got)
	}

	// A third list fills the limit: a lease that may dead-letter into a fourth is refused, and
	// takes no line; one that cannot dead-letter goes ahead.
	ts.expect(t, "/sts/ADD?FILENAME=s&LINE=x", okBody(""))
	if a, js := ts.getAnswer(t, "/sts/READ?FILENAME=s&LEASE=60000&MAX_DELIVERIES=1&FORMAT=JSON"); a.status != http.StatusInsufficientStorage || js.Reason != protocol.ReasonLimit {
		t.Fatalf("a lease whose dead letters have no room: %d %s", a.status, a.body)
	}
	ts.checkLines(t, "s", "x")
	if a, _ := ts.getAnswer(t, "/sts/READ?FILENAME=s&LEASE=60000&FORMAT=JSON"); a.status != http.StatusOK {
		t.Fatalf("a lease without dead letters: %d %s", a.status, a.body)
	}
}

// listNames are the lists STATUS reports.
func (ts *testServer) listNames(t testing.TB) []string {
	t.Helper()
	_, js := ts.getAnswer(t, "/sts/STATUS?FORMAT=JSON")
	names := make([]string, len(js.Lists))
	for i, l := range js.Lists {
		names[i] = l.Name
	}
	return names
}
