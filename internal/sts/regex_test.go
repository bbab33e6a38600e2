package sts

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
)

// slowLine returns the longest line on which the pattern (a+)+$ backtracks for less than
// limit/2, with its cost measured on this machine: each extra 'a' doubles the time, so a line
// below limit/2 always exists, and a timeout per line would never end a scan of such lines.
func slowLine(t *testing.T, limit time.Duration) (string, time.Duration) {
	t.Helper()
	re, err := javaregex.Compile(`(a+)+$`, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	var cost time.Duration
	for n := 10; n < 40; n++ {
		next := strings.Repeat("a", n) + "!"
		least := time.Duration(1<<63 - 1)
		for range 3 { // the least of three runs, so that a pause does not count
			start := time.Now()
			if _, err := re.Find(next); err != nil {
				t.Fatal(err)
			}
			least = min(least, time.Since(start))
		}
		if least >= limit/2 {
			if line == "" {
				t.Fatalf("(a+)+$ takes %v on %d a's already", least, n)
			}
			return line, cost
		}
		line, cost = next, least
	}
	t.Fatal("(a+)+$ never got slow")
	return "", 0
}

// A FIND's regex timeout bounds the whole request, not each line: a scan of lines that each
// stay under the limit, 30 times the limit in all, ends near the limit; and a LENGTH sent
// while it runs waits no longer than the FIND's matches may run.
func TestFindRegexLimitBoundsTheRequest(t *testing.T) {
	const limit = 400 * time.Millisecond
	ts := startServer(t, func(c *Config) { c.RegexTimeout = limit })
	line, cost := slowLine(t, limit)
	// As many lines as make the scan 30 times the limit, whatever one line costs here.
	lines := make([]string, int(30*limit/cost)+1)
	for i := range lines {
		lines[i] = line
	}
	ts.loadList(t, "r", lines...)
	length := okBody(strconv.Itoa(len(lines)))
	scan := time.Duration(len(lines)) * cost // what a limit per line would let the scan take

	start := time.Now()
	found := make(chan string, 1)
	ts.sendInBackground("/sts/FIND?FILENAME=r&FIND_MODE=REGEX_MATCH&LINE=(a%2B)%2B%24", found)
	// LENGTHs one after the other until the FIND answers: some run while it holds the list.
	var body string
	var lengthTook time.Duration
	for lengths := 0; body == ""; lengths++ {
		if time.Since(start) > 2*scan {
			t.Fatalf("FIND over %d lines of %v each has not answered after %v", len(lines), cost, time.Since(start))
		}
		sent := time.Now()
		ts.expect(t, "/sts/LENGTH?FILENAME=r", length)
		lengthTook = max(lengthTook, time.Since(sent))
		select {
		case body = <-found:
			t.Logf("%d LENGTHs sent while the FIND ran", lengths+1)
		default:
		}
	}
	findTook := time.Since(start)
	if body != koBody("Regex evaluation timed out !") {
		t.Fatalf("FIND over %d lines of %v each: %q, want the timeout", len(lines), cost, body)
	}
	// Both end near the limit, far from the scan's cost (30 times the limit): a tenth of the
	// scan leaves a loaded machine 2.6 s of slack.
	if findTook > scan/10 || lengthTook > scan/10 {
		t.Errorf("FIND took %v and a LENGTH waited %v; the limit is %v and the whole scan %v", findTook, lengthTook, limit, scan)
	}
	t.Logf("FIND took %v, a LENGTH waited %v at most (limit %v, scan of %d lines %v)", findTook, lengthTook, limit, len(lines), scan)
	ts.expect(t, "/sts/LENGTH?FILENAME=r", length) // nothing taken
	// Each FIND has a limit of its own.
	ts.get(t, "/sts/ADD?FILENAME=r&LINE=aaa")
	ts.expect(t, "/sts/FIND?FILENAME=r&FIND_MODE=REGEX_MATCH&LINE=(a%2B)%2B%24", okBody("aaa"))
}

func TestFindRefusesHugeRegex(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "rx", "a", "b")
	find := func(pattern string, json bool) answer {
		t.Helper()
		form := url.Values{"FILENAME": {"rx"}, "FIND_MODE": {"REGEX_FIND"}, "LINE": {pattern}}
		var header []string
		if json {
			header = []string{"Accept", "application/json"}
		}
		return ts.do(t, http.MethodPost, "/sts/FIND", "application/x-www-form-urlencoded", form.Encode(), header...)
	}
	tooLong := koBody("Regex longer than " + strconv.Itoa(javaregex.MaxPatternBytes) + " bytes !")
	// The audit's 20 000 nested look-aheads took seconds to compile; they are refused unread.
	nested := strings.Repeat("(?=", 20000) + "a" + strings.Repeat(")", 20000)
	start := time.Now()
	if a := find(nested, false); a.body != tooLong {
		t.Errorf("20 000 nested look-aheads: %.200q", a.body)
	}
	// Bounds far above the cost here (a few ms, and ~0.4s for the chain under -race), so that a
	// slow or loaded CI machine does not fail them: they catch a pattern that stalls the server,
	// not a slowdown.
	const quick = 10 * time.Second
	if took := time.Since(start); took > quick {
		t.Errorf("refusing a long pattern took %v", took)
	}
	if a := find(nested, true); a.status != http.StatusBadRequest || !strings.Contains(a.body, `"reason":"regex_too_long"`) {
		t.Errorf("JSON: %d %s", a.status, a.body)
	}
	// Up to the limit, a pattern is compiled; a long chain of class intersections compiles fast.
	exact := strings.Repeat("x", javaregex.MaxPatternBytes-2) + "|b"
	if a := find(exact, false); a.body != okBody("b") {
		t.Errorf("a pattern of %d bytes: %.200q", len(exact), a.body)
	}
	if a := find(exact+"c", false); a.body != tooLong {
		t.Errorf("a pattern of %d bytes: %.200q", len(exact)+1, a.body)
	}
	chain := "[" + strings.Repeat("a&&", (javaregex.MaxPatternBytes-3)/3) + "a]"
	start = time.Now()
	if a := find(chain, false); a.body != okBody("a") {
		t.Errorf("a chain of intersections: %.200q", a.body)
	}
	if took := time.Since(start); took > quick {
		t.Errorf("a chain of intersections of %d bytes took %v", len(chain), took)
	}
	// A short pattern whose case-insensitive classes span most of Unicode many times over.
	wide := "(?i)" + strings.Repeat(`[\x{100}-\x{10FFFF}]`, 50)
	if a := find(wide, false); a.body != koBody("Regex too costly to compile !") {
		t.Errorf("wide case-insensitive ranges: %.200q", a.body)
	}
	if a := find(wide, true); a.status != http.StatusBadRequest || !strings.Contains(a.body, `"reason":"regex_too_costly"`) {
		t.Errorf("JSON: %d %s", a.status, a.body)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=rx", okBody("2"))
}

// TestAdversarialCatastrophicWaitersDoNotHoldUpWriters has 30 FINDs wait with the catastrophic
// regex (a+)+$ on a list, then adds a line on which it backtracks for ever: every waiter's regex
// times out on it. The ADD that brings it, the next ADD to that list and an ADD to another list
// (sent while the waiters' matches run) must each answer within 50 ms, however long they take (issue 17: 32.6 s with a
// regex timeout of 1 s, when each waiter spent its budget under the list's lock). Each waiter
// then answers the regex timeout, as a FIND that does not wait would, and the line stays.
func TestAdversarialCatastrophicWaitersDoNotHoldUpWriters(t *testing.T) {
	const (
		waiters = 30
		budget  = 150 * time.Millisecond // --regex-timeout; the figure is for 1 s
		bound   = 50 * time.Millisecond
	)
	ts := startServer(t, func(c *Config) { c.RegexTimeout = budget })
	ts.expect(t, "/sts/ADD?FILENAME=evil&LINE=b", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=other&LINE=b", okBody(""))
	answers := make(chan string, waiters)
	for range waiters {
		ts.sendInBackground("/sts/FIND?FILENAME=evil&FIND_MODE=REGEX_FIND&LINE=(a%2B)%2B%24&WAIT=60000", answers)
	}
	ts.untilWaiting(t, waiters)

	add := func(list, line string) time.Duration {
		start := time.Now()
		ts.expect(t, "/sts/ADD?FILENAME="+list+"&ADD_MODE=LAST&LINE="+line, okBody(""))
		return time.Since(start)
	}
	evil := strings.Repeat("a", 32) + "!"
	start := time.Now()
	evilAdded := make(chan time.Duration, 1)
	go func() { evilAdded <- add("evil", evil) }()
	time.Sleep(budget / 5) // the waiters' matches have begun
	nextAdd := add("evil", "c")
	otherAdd := add("other", "c")
	evilAdd := <-evilAdded
	t.Logf("%d waiters with (a+)+$, regex timeout %v: the ADD of the evil line took %v, the next ADD to that list %v, an ADD to another list %v",
		waiters, budget, evilAdd, nextAdd, otherAdd)
	for what, took := range map[string]time.Duration{"the evil line's ADD": evilAdd, "the next ADD": nextAdd, "an ADD to another list": otherAdd} {
		if took > bound {
			t.Errorf("%s took %v, over %v", what, took, bound)
		}
	}

	// Every waiter's regex timed out on the evil line; none took a line.
	patience := time.After(waiters*budget*2 + 10*time.Second)
	for i := range waiters {
		select {
		case body := <-answers:
			if body != koBody("Regex evaluation timed out !") {
				t.Errorf("waiter %d: %q, want the regex timeout", i, body)
			}
		case <-patience:
			t.Fatalf("%d of %d waiters did not answer", waiters-i, waiters)
		}
	}
	t.Logf("all %d waiters answered the regex timeout %v after the evil line", waiters, time.Since(start))
	if got, want := ts.lines(t, "evil"), []string{"b", evil, "c"}; !slices.Equal(got, want) {
		t.Errorf("list evil = %q, want %q", got, want)
	}
}

// TestAdversarialCatastrophicFindsDoNotHoldUpWriters sends 8 FINDs that do not wait, each with
// the catastrophic regex (a+)+$, to a list holding a line on which it backtracks for ever, and
// ADDs to that list while they run: each FIND spends its whole regex budget (300 ms) on the
// line, off the list's lock, so the ADD answers long before one budget has passed, where it used
// to queue behind every FIND's budget in turn. Each FIND answers the regex timeout.
func TestAdversarialCatastrophicFindsDoNotHoldUpWriters(t *testing.T) {
	const (
		finds  = 8
		budget = 300 * time.Millisecond // --regex-timeout
	)
	ts := startServer(t, func(c *Config) { c.RegexTimeout = budget })
	evil := strings.Repeat("a", 32) + "!"
	ts.expect(t, "/sts/ADD?FILENAME=evil&LINE="+evil, okBody(""))
	answers := make(chan string, finds)
	for range finds {
		ts.sendInBackground("/sts/FIND?FILENAME=evil&FIND_MODE=REGEX_FIND&LINE=(a%2B)%2B%24", answers)
	}
	time.Sleep(budget / 3) // the FINDs' matches have begun
	start := time.Now()
	ts.expect(t, "/sts/ADD?FILENAME=evil&ADD_MODE=LAST&LINE=c", okBody(""))
	took := time.Since(start)
	t.Logf("%d FINDs with (a+)+$ running, regex timeout %v: an ADD to their list took %v", finds, budget, took)
	if took > budget/2 {
		t.Errorf("the ADD took %v: it waited for a FIND's regex (budget %v)", took, budget)
	}
	for i := range finds {
		select {
		case body := <-answers:
			if body != koBody("Regex evaluation timed out !") {
				t.Errorf("FIND %d: %q, want the regex timeout", i, body)
			}
		case <-time.After(finds*budget + 10*time.Second):
			t.Fatalf("%d of %d FINDs did not answer", finds-i, finds)
		}
	}
	if got, want := ts.lines(t, "evil"), []string{evil, "c"}; !slices.Equal(got, want) {
		t.Errorf("list evil = %q, want %q", got, want)
	}
}

// The flood of the adversarial FIND tests: floodFinds FINDs on list evil whose catastrophic regex
// spends its whole budget, floodBudget (--regex-timeout).
const (
	floodFinds  = 12
	floodBudget = 300 * time.Millisecond
)

// floodServer starts a server with the flood's regex budget and evil's one line.
func floodServer(t *testing.T) *testServer {
	t.Helper()
	ts := startServer(t, func(c *Config) { c.RegexTimeout = floodBudget })
	ts.expect(t, "/sts/ADD?FILENAME=evil&LINE="+strings.Repeat("a", 32)+"!", okBody(""))
	return ts
}

// behindFlood sends the flood to ts and, once it queues (one budget has passed), runs victim, a
// request to another list, and returns how long victim took. It waits for the rest of the flood.
func behindFlood(t *testing.T, ts *testServer, victim func()) time.Duration {
	t.Helper()
	answers := make(chan string, floodFinds)
	for range floodFinds {
		ts.sendInBackground("/sts/FIND?FILENAME=evil&FIND_MODE=REGEX_FIND&KEEP=TRUE&LINE=(a%2B)%2B%24", answers)
	}
	<-answers
	start := time.Now()
	victim()
	took := time.Since(start)
	for range floodFinds - 1 {
		<-answers
	}
	return took
}

// TestAdversarialCatastrophicFindsDoNotStarveOtherLists floods one list with FINDs whose
// catastrophic regex spends its whole budget, and sends a FIND to another list once the flood
// queues: it waits behind one of the flood's budgets at most, since the flood queues on its own
// list's gate, where it used to wait behind every FIND of the flood in turn.
func TestAdversarialCatastrophicFindsDoNotStarveOtherLists(t *testing.T) {
	ts := floodServer(t)
	ts.loadList(t, "other", "x1", "x2", "x3", "needle")
	took := behindFlood(t, ts, func() { ts.expect(t, "/sts/FIND?FILENAME=other&LINE=needle&KEEP=TRUE", okBody("needle")) })
	t.Logf("%d FINDs with (a+)+$ on one list, regex timeout %v: a FIND of another list took %v", floodFinds, floodBudget, took)
	// One budget and the time to answer; three leave room for a loaded machine, where the old
	// gate made it wait 4.4 s (12 budgets) on two cores.
	if took > 3*floodBudget {
		t.Errorf("the FIND of another list took %v, over three regex budgets (%v): it waited behind the flood", took, floodBudget)
	}
}

// TestAdversarialCatastrophicFindsDoNotStarveAWaitingFind is the same flood, against a FIND that
// waits on another list for lines to come (the path of waiting FINDs, not the scan's): when four
// arrive at once (INITFILE), it tests them behind one of the flood's budgets at most, since the
// flood queues on its own list's gate.
func TestAdversarialCatastrophicFindsDoNotStarveAWaitingFind(t *testing.T) {
	ts := floodServer(t)
	ts.loadList(t, "other", "x0")
	found := ts.background(t, "/sts/FIND?FILENAME=other&LINE=needle&KEEP=TRUE&WAIT=20000")
	ts.untilWaiting(t, 1)
	took := behindFlood(t, ts, func() {
		ts.loadList(t, "other", "x1", "x2", "x3", "needle")
		if got := found(); got != okBody("needle") {
			t.Errorf("the waiting FIND answered %q, want needle", got)
		}
	})
	t.Logf("%d FINDs with (a+)+$ on one list, regex timeout %v: a waiting FIND of four new lines of another list took %v", floodFinds, floodBudget, took)
	if took > 3*floodBudget {
		t.Errorf("the waiting FIND took %v, over three regex budgets (%v): it waited behind the flood", took, floodBudget)
	}
}
