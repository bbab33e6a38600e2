package sts

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// leaseOf is the lease id an answer carries in X-STS-Lease, checked to come with an expiry
// within ttl from now.
func leaseOf(t testing.TB, a answer, ttl time.Duration) string {
	t.Helper()
	id := a.header.Get(leaseHeader)
	expires, err := time.Parse(time.RFC3339Nano, a.header.Get(leaseExpiresHeader))
	if id == "" || err != nil {
		t.Fatalf("no lease in the answer: %s %q, %s %q (%v); body %q", leaseHeader, id, leaseExpiresHeader, a.header.Get(leaseExpiresHeader), err, a.body)
	}
	if until := time.Until(expires); until <= 0 || until > ttl {
		t.Fatalf("the lease expires in %v, want within %v", until, ttl)
	}
	return id
}

// getAnswer sends a GET whose target asks for the JSON form and decodes its answer.
func (ts *testServer) getAnswer(t testing.TB, target string) (answer, protocol.Answer) {
	t.Helper()
	a := ts.do(t, http.MethodGet, target, "", "")
	var decoded protocol.Answer
	if err := json.Unmarshal([]byte(a.body), &decoded); err != nil {
		t.Fatalf("%s: %v in %q", target, err, a.body)
	}
	return a, decoded
}

// expectKO sends a GET in both forms and checks the KO: its message in the HTML form, its HTTP
// status and reason in the JSON form.
func (ts *testServer) expectKO(t testing.TB, target string, status int, reason, message string) {
	t.Helper()
	ts.expect(t, target, koBody(message))
	a, js := ts.getAnswer(t, target+"&FORMAT=JSON")
	if a.status != status || js.OK || js.Reason != reason || js.Error != message {
		t.Errorf("%s (JSON): %d %s, want %d %s %q", target, a.status, a.body, status, reason, message)
	}
}

// listStatus is the JSON STATUS row of a list.
func (ts *testServer) listStatus(t testing.TB, name string) protocol.List {
	t.Helper()
	_, js := ts.getAnswer(t, "/sts/STATUS?FORMAT=JSON")
	for _, l := range js.Lists {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("STATUS has no list %q: %+v", name, js.Lists)
	return protocol.List{}
}

// checkLines fails unless the list holds want, in order.
func (ts *testServer) checkLines(t testing.TB, name string, want ...string) {
	t.Helper()
	if got := ts.lines(t, name); !slices.Equal(got, want) {
		t.Fatalf("list %q = %q, want %q", name, got, want)
	}
}

// A leased READ takes the line out of the list, as KEEP=FALSE does, and says its lease in a
// header; ACK by the id alone (no FILENAME) ends it, and a second ACK finds no lease.
func TestLeasedReadHoldsTheLineUntilAck(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "a", "b", "c")
	a := ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&KEEP=FALSE&LEASE=60000", "", "")
	ts.checkCommandAnswer(t, "READ LEASE", a)
	if a.body != okBody("a") {
		t.Fatalf("leased READ: %q", a.body)
	}
	id := leaseOf(t, a, time.Minute)
	ts.expect(t, "/sts/LENGTH?FILENAME=q", okBody("2"))
	if l := ts.listStatus(t, "q"); l.Length != 2 || l.Leased != 1 {
		t.Fatalf("STATUS of q: %+v, want 2 lines, 1 leased", l)
	}
	// STATUS in HTML is the original's, byte for byte: leases show in JSON and metrics only.
	ts.expect(t, "/sts/STATUS", okHead+"\n"+"q = 2<br />\n</body></html>")

	ts.expect(t, "/sts/ACK?LEASE="+id, okBody(""))
	ts.expectKO(t, "/sts/ACK?LEASE="+id, http.StatusNotFound, protocol.ReasonLeaseNotFound, "No such lease: unknown, acknowledged, or ended too long ago !")
	if l := ts.listStatus(t, "q"); l.Length != 2 || l.Leased != 0 || l.Returned != 0 {
		t.Fatalf("STATUS of q after ACK: %+v", l)
	}
	ts.checkLines(t, "q", "b", "c")
	// Without LEASE, a read is what it always was.
	a = ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&KEEP=FALSE", "", "")
	if a.body != okBody("b") || a.header.Get(leaseHeader) != "" || a.header.Get(leaseExpiresHeader) != "" {
		t.Fatalf("READ without LEASE: %q %v", a.body, a.header)
	}
}

// A leased READMULTI holds its lines under one lease, which the JSON form carries with its expiry;
// RELEASE gives them back where ADD_MODE says, and then ACK is told the lease was released.
func TestLeasedReadMultiAndRelease(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "a", "b", "c", "d")
	a, js := ts.getAnswer(t, "/sts/READMULTI?FILENAME=q&NB_LINES=2&KEEP=FALSE&LEASE=30000&FORMAT=JSON")
	id := leaseOf(t, a, 30*time.Second)
	if !js.OK || !slices.Equal(js.Values, []string{"a", "b"}) || js.Lease == nil || *js.Lease != id ||
		js.Expires == nil || js.Expires.Format(time.RFC3339Nano) != a.header.Get(leaseExpiresHeader) {
		t.Fatalf("leased READMULTI (JSON): %s", a.body)
	}
	ts.checkLines(t, "q", "c", "d")
	ts.expect(t, "/sts/RELEASE?FILENAME=q&LEASE="+id+"&ADD_MODE=LAST", okBody(""))
	ts.checkLines(t, "q", "c", "d", "a", "b")
	// A retried RELEASE succeeds and changes nothing; ACK and EXTEND are told why they come late.
	ts.expect(t, "/sts/RELEASE?LEASE="+id, okBody(""))
	ts.checkLines(t, "q", "c", "d", "a", "b")
	ts.expectKO(t, "/sts/ACK?LEASE="+id, http.StatusConflict, protocol.ReasonLeaseEnded, "Lease released, its lines went back !")
	ts.expectKO(t, "/sts/EXTEND?LEASE="+id+"&LEASE_MS=1000", http.StatusConflict, protocol.ReasonLeaseEnded, "Lease released, its lines went back !")

	html := ts.do(t, http.MethodGet, "/sts/READMULTI?FILENAME=q&NB_LINES=2&LEASE=30000", "", "")
	if html.body != okHead+"\n"+"c<br />\nd<br />\n</body>\n</html>" {
		t.Fatalf("leased READMULTI (HTML): %q", html.body)
	}
	ts.expect(t, "/sts/RELEASE?LEASE="+leaseOf(t, html, 30*time.Second), okBody(""))
	ts.checkLines(t, "q", "c", "d", "a", "b")
	if l := ts.listStatus(t, "q"); l.Leased != 0 || l.Returned != 4 {
		t.Fatalf("STATUS of q: %+v, want 4 lines returned", l)
	}
}

// A plan that keeps only the line acknowledges, releases and extends by FILENAME and LINE; a
// leased FIND takes its line as a leased READ does.
func TestLeaseByLine(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "users", "ann;fr", "bob;de", "cid;fr", "dan;fr")
	found := ts.do(t, http.MethodGet, "/sts/FIND?FILENAME=users&LINE=%3Bfr&KEEP=FALSE&LEASE=60000", "", "")
	if found.body != okBody("ann;fr") {
		t.Fatalf("leased FIND: %q", found.body)
	}
	leaseOf(t, found, time.Minute)
	ts.get(t, "/sts/READ?FILENAME=users&KEEP=FALSE&LEASE=60000")
	ts.get(t, "/sts/READ?FILENAME=users&KEEP=FALSE&LEASE=60000&READ_MODE=LAST")
	ts.checkLines(t, "users", "cid;fr")

	ts.expect(t, "/sts/ACK?FILENAME=users&LINE=ann%3Bfr", okBody(""))
	ts.expectKO(t, "/sts/ACK?FILENAME=users&LINE=ann%3Bfr", http.StatusNotFound, protocol.ReasonLeaseNotFound, "No lease of users holds this line !")
	// A line in the list but held by no lease is no lease's.
	ts.expectKO(t, "/sts/ACK?FILENAME=users&LINE=cid%3Bfr", http.StatusNotFound, protocol.ReasonLeaseNotFound, "No lease of users holds this line !")
	ts.expect(t, "/sts/RELEASE?FILENAME=users&LINE=bob%3Bde", okBody(""))
	ts.checkLines(t, "users", "bob;de", "cid;fr")

	before := time.Now()
	a, js := ts.getAnswer(t, "/sts/EXTEND?FILENAME=users&LINE=dan%3Bfr&LEASE_MS=3000000&FORMAT=JSON")
	if !js.OK || js.Lease != nil || js.Expires == nil || js.Expires.Before(before.Add(50*time.Minute-time.Second)) ||
		a.header.Get(leaseExpiresHeader) != js.Expires.Format(time.RFC3339Nano) {
		t.Fatalf("EXTEND by line: %d %s %v", a.status, a.body, a.header)
	}
	if l := ts.listStatus(t, "users"); l.Leased != 1 {
		t.Fatalf("STATUS of users: %+v, want 1 leased", l)
	}
}

// EXTEND by id keeps a lease running past its first expiry, and echoes the lease: a lease taken
// after it for as long, and not extended, runs out while the extended one holds its line.
func TestExtendKeepsTheLease(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "a", "b")
	// Leases of 3 s leave a loaded machine time for the EXTEND; the control's expiry comes after
	// the extended lease's first one, whatever the machine's pace.
	id := leaseOf(t, ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&LEASE=3000", "", ""), 3*time.Second)
	leaseOf(t, ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&LEASE=3000", "", ""), 3*time.Second)
	a := ts.do(t, http.MethodGet, "/sts/EXTEND?FILENAME=q&LEASE="+id+"&LEASE_MS=60000", "", "")
	if a.body != okBody("") || leaseOf(t, a, time.Minute) != id {
		t.Fatalf("EXTEND: %q %v", a.body, a.header)
	}
	testutil.Until(t, 20*time.Second, 10*time.Millisecond, "the control lease to run out", func() bool {
		return slices.Contains(ts.lines(t, "q"), "b")
	})
	if l := ts.listStatus(t, "q"); l.Leased != 1 || !slices.Equal(ts.lines(t, "q"), []string{"b"}) {
		t.Fatalf("an extended lease ran out: %+v, lines %q", l, ts.lines(t, "q"))
	}
	ts.expect(t, "/sts/ACK?LEASE="+id, okBody(""))
}

// A lease that runs out gives its line back to the front once, and wakes a read waiting for
// it; an ACK that comes after is refused (409) and removes nothing.
func TestExpiredLeaseReturnsTheLineOnce(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "a", "b", "c")
	id := leaseOf(t, ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&KEEP=FALSE&LEASE=150", "", ""), time.Second)
	ts.checkLines(t, "q", "b", "c")
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the lease to expire", func() bool { return ts.listStatus(t, "q").Leased == 0 })
	ts.checkLines(t, "q", "a", "b", "c")
	if l := ts.listStatus(t, "q"); l.Returned != 1 || l.Length != 3 {
		t.Fatalf("STATUS of q: %+v, want 3 lines, 1 returned", l)
	}
	ts.expectKO(t, "/sts/ACK?FILENAME=q&LEASE="+id, http.StatusConflict, protocol.ReasonLeaseEnded, "Lease expired, its lines went back !")
	ts.checkLines(t, "q", "a", "b", "c")
	ts.expect(t, "/sts/LENGTH?FILENAME=q", okBody("3"))
}

func TestExpiredLeaseWakesAWaitingRead(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "only")
	leaseOf(t, ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&LEASE=500", "", ""), time.Second)
	waiting := ts.background(t, "/sts/READ?FILENAME=q&KEEP=FALSE&WAIT=10000")
	ts.untilWaiting(t, 1)
	if got := waiting(); got != okBody("only") {
		t.Fatalf("the waiting READ got %q", got)
	}
	ts.checkLines(t, "q")
}

// After MAX_DELIVERIES returns a line goes to <list>.dead instead of back; the per-list default
// (--max-deliveries-list) applies without the parameter, and the parameter overrides it.
func TestDeadLetterAfterMaxDeliveries(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxDeliveriesByList = map[string]int{"byflag": 1} })
	ts.loadList(t, "q", "poison", "ok")
	for range 2 {
		a := ts.do(t, http.MethodGet, "/sts/READ?FILENAME=q&LEASE=60000&MAX_DELIVERIES=2", "", "")
		ts.expect(t, "/sts/RELEASE?LEASE="+leaseOf(t, a, time.Minute), okBody(""))
	}
	ts.checkLines(t, "q", "ok")
	ts.checkLines(t, "q.dead", "poison")
	if l := ts.listStatus(t, "q"); l.Returned != 1 || l.DeadLettered != 1 {
		t.Fatalf("STATUS of q: %+v, want 1 returned, 1 dead-lettered", l)
	}

	ts.loadList(t, "byflag", "x")
	a := ts.do(t, http.MethodGet, "/sts/READ?FILENAME=byflag&LEASE=60000", "", "")
	ts.expect(t, "/sts/RELEASE?LEASE="+leaseOf(t, a, time.Minute), okBody(""))
	ts.checkLines(t, "byflag.dead", "x")
	ts.loadList(t, "byflag", "y")
	a = ts.do(t, http.MethodGet, "/sts/READ?FILENAME=byflag&LEASE=60000&MAX_DELIVERIES=0", "", "")
	ts.expect(t, "/sts/RELEASE?LEASE="+leaseOf(t, a, time.Minute), okBody(""))
	ts.checkLines(t, "byflag", "y")
}

// Parameters that make no sense are refused before anything is taken, naming the range.
func TestLeaseBadInput(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxLease = 10 * time.Second })
	ts.loadList(t, "q", "a", "b")
	leaseRange := "LEASE value has to be a number of milliseconds from 1 to 10000 !"
	for _, target := range []string{
		"/sts/READ?FILENAME=q&LEASE=0", "/sts/READ?FILENAME=q&LEASE=-5", "/sts/READ?FILENAME=q&LEASE=abc",
		"/sts/READ?FILENAME=q&LEASE=", "/sts/READ?FILENAME=q&LEASE=10001", "/sts/READ?FILENAME=q&LEASE=99999999999999999999",
		"/sts/READMULTI?FILENAME=q&NB_LINES=1&LEASE=1e3", "/sts/FIND?FILENAME=q&LINE=a&LEASE=+5",
	} {
		ts.expectKO(t, target, http.StatusBadRequest, protocol.ReasonInvalidParameter, leaseRange)
	}
	invalid := map[string]string{
		"/sts/READ?FILENAME=q&LEASE=1000&KEEP=TRUE":                              "LEASE needs KEEP=FALSE !",
		"/sts/FIND?FILENAME=q&LINE=a&LEASE=1000&KEEP=TRUE":                       "LEASE needs KEEP=FALSE !",
		"/sts/READ?FILENAME=q&MAX_DELIVERIES=3":                                  "MAX_DELIVERIES goes with LEASE !",
		"/sts/READ?FILENAME=q&LEASE=1000&MAX_DELIVERIES=-1":                      "MAX_DELIVERIES value has to be a number from 0 (never dead-letter) to 2147483647 !",
		"/sts/ACK?FILENAME=q&LEASE=x&LINE=a":                                     "LEASE and LINE exclude each other: name the lease or its line !",
		"/sts/ACK?LEASE=":                                                        "LEASE value has to be 1 to 128 bytes without control characters !",
		"/sts/ACK?LEASE=" + strings.Repeat("x", 129):                             "LEASE value has to be 1 to 128 bytes without control characters !",
		"/sts/EXTEND?LEASE=x&LEASE_MS=0":                                         "LEASE_MS value has to be a number of milliseconds from 1 to 10000 !",
		"/sts/RELEASE?LEASE=x&ADD_MODE=MIDDLE":                                   "ADD_MODE value has to be FIRST or LAST !",
		"/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=" + strings.Repeat("r", 129): "REQUEST_ID value has to be 1 to 128 bytes without control characters !",
		"/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=a%0Ab":                       "REQUEST_ID value has to be 1 to 128 bytes without control characters !",
	}
	for target, message := range invalid {
		ts.expectKO(t, target, http.StatusBadRequest, protocol.ReasonInvalidParameter, message)
	}
	missing := map[string]string{
		"/sts/ACK?LINE=a":     "FILENAME parameter was missing !",
		"/sts/ACK?FILENAME=q": "LEASE or LINE parameter was missing !",
		"/sts/EXTEND?LEASE=x": "LEASE_MS parameter was missing !",
	}
	for target, message := range missing {
		ts.expectKO(t, target, http.StatusBadRequest, protocol.ReasonMissingParameter, message)
	}
	ts.expectKO(t, "/sts/EXTEND?LEASE=nosuchlease&LEASE_MS=1000", http.StatusNotFound, protocol.ReasonLeaseNotFound, "No such lease: unknown, acknowledged, or ended too long ago !")
	// Nothing was taken.
	ts.checkLines(t, "q", "a", "b")
	if l := ts.listStatus(t, "q"); l.Leased != 0 {
		t.Fatalf("STATUS of q: %+v", l)
	}
}

// Lease figures reach /metrics for the lists that have had leases, and only those, within the
// cap on per-list series.
func TestLeaseMetrics(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MetricsMaxLists = 3 }) // a, a.dead, b
	ts.loadList(t, "a", "1", "2")
	ts.loadList(t, "b", "plain")
	ts.loadList(t, "c", "x", "y")
	ts.get(t, "/sts/READ?FILENAME=a&LEASE=60000")
	ts.expect(t, "/sts/RELEASE?LEASE="+leaseOf(t, ts.do(t, http.MethodGet, "/sts/READ?FILENAME=a&LEASE=60000&MAX_DELIVERIES=1", "", ""), time.Minute), okBody(""))
	ts.get(t, "/sts/READMULTI?FILENAME=c&NB_LINES=2&LEASE=60000")
	m := ts.scrape(t)
	expectValue(t, m, 1, "sts_list_leased_lines", "list", "a")
	expectValue(t, m, 0, "sts_list_returned_lines_total", "list", "a")
	expectValue(t, m, 1, "sts_list_dead_lettered_lines_total", "list", "a")
	if _, found := value(m, "sts_list_leased_lines", "list", "b"); found {
		t.Error("a list that never had a lease has lease series")
	}
	expectValue(t, m, 2, "sts_other_lists_leased_lines")
	expectValue(t, m, 0, "sts_other_lists_returned_lines_total")
	expectValue(t, m, 0, "sts_other_lists_dead_lettered_lines_total")
	expectValue(t, m, 1, "sts_commands_total", "command", "RELEASE", "result", "OK")
}

// The answer of a read with a lease is what the original's parsers expect: the JSON form adds its
// fields and nothing else.
func TestLeasedReadJSONFields(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "q", "a")
	status, m := ts.getJSON(t, "/sts/READ?FILENAME=q&LEASE=5000&FORMAT=JSON", false)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if status != http.StatusOK || !reflect.DeepEqual(keys, []string{"command", "expires", "lease", "ok", "value"}) {
		t.Fatalf("leased READ (JSON): %d %v", status, m)
	}
}
