package sts

import (
	"context"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/journal"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

func TestDurableServerWaitsForItsStartup(t *testing.T) {
	ts := startJournaledServer(t, t.TempDir(), journal.Options{})
	a := ts.do(t, http.MethodGet, "/sts/STATUS", "", "")
	if a.status != http.StatusServiceUnavailable || a.body != koBody("Server is starting, retry later !") {
		t.Errorf("a command before startup is done: %d %q", a.status, a.body)
	}
	if a := ts.do(t, http.MethodGet, "/healthz", "", ""); a.status != http.StatusOK {
		t.Errorf("/healthz while starting: %d", a.status)
	}
	if a := ts.do(t, http.MethodGet, "/readyz", "", ""); a.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while starting: %d", a.status)
	}
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !"))
}

// TestRestartGoesOnWhereItStopped runs a server on a state directory, changes its lists (a
// startup list included, with RANDOM and KEEP moves), and starts another on the same directory
// with the same startup sources: it must serve exactly the lists the first left, load only the
// source whose list the state lacks, and say so in its log.
func TestRestartGoesOnWhereItStopped(t *testing.T) {
	state, sources := t.TempDir(), t.TempDir()
	users := filepath.Join(sources, "users.csv")
	extra := filepath.Join(sources, "extra.csv")
	writeFiles(t, sources, map[string]string{"users.csv": "u1\nu2\nu3\nu4\nu5\n", "extra.csv": "e1\ne2\n"})
	withUsers := func(c *Config) { c.Loads = []Load{{List: "users", Path: users}} }

	first := startJournaledServer(t, state, journal.Options{}, withUsers)
	first.srv.LoadAtStartup(context.Background())
	first.expect(t, "/sts/READ?FILENAME=users&KEEP=FALSE", okBody("u1"))
	first.get(t, "/sts/READ?FILENAME=users&READ_MODE=RANDOM&KEEP=TRUE")
	first.get(t, "/sts/READMULTI?FILENAME=users&NB_LINES=2&READ_MODE=RANDOM&KEEP=FALSE")
	first.expect(t, "/sts/ADD?FILENAME=queue&LINE=job1&ADD_MODE=LAST", okBody(""))
	first.expect(t, "/sts/ADD?FILENAME=queue&LINE=job0", okBody(""))
	want := map[string][]string{"users": first.lines(t, "users"), "queue": {"job0", "job1"}}
	first.srv.Drain()
	if err := first.journal.Close(); err != nil {
		t.Fatal(err)
	}

	second := startJournaledServer(t, state, journal.Options{}, func(c *Config) {
		c.Loads = []Load{{List: "users", Path: users}, {List: "extra", Path: extra}}
	})
	second.srv.LoadAtStartup(context.Background())
	want["extra"] = []string{"e1", "e2"}
	for name, lines := range want {
		if got := second.lines(t, name); !slices.Equal(got, lines) {
			t.Errorf("list %s after the restart: %q, want %q", name, got, lines)
		}
	}
	log := second.log.String()
	if !strings.Contains(log, `msg="Kept the list the store holds instead of loading it" list=users lines=2`) ||
		!strings.Contains(log, `msg="Loaded list" list=extra lines=2`) {
		t.Errorf("the startup log does not say what it kept and loaded:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(state, "LOCK")); err != nil {
		t.Errorf("no lock file: %v", err)
	}
}

// heldRecorder records nothing, and makes every change durable only once the test releases it.
// It takes records up to max bytes (0: any size), and counts the answers waiting for a change to
// be durable.
type heldRecorder struct {
	release chan struct{}
	seq     atomic.Uint64
	max     int64
	waiting atomic.Int64
}

func (h *heldRecorder) MaxChange() int64 {
	if h.max == 0 {
		return math.MaxInt64
	}
	return h.max
}

type heldCommit struct {
	release chan struct{}
	waiting *atomic.Int64
}

func (c heldCommit) Wait() error {
	c.waiting.Add(1)
	<-c.release
	return nil
}

func (h *heldRecorder) Record([]byte) (uint64, memory.Commit) {
	return h.seq.Add(1), heldCommit{h.release, &h.waiting}
}

// On a durable server, a bulk load whose journal record would be too large is refused before it
// changes anything, naming the limit; a smaller one goes through. Once made, a change the journal
// cannot take would stop the server.
func TestLoadTooLargeToJournalIsRefused(t *testing.T) {
	requireMemory(t, "the journal is the memory backend's")
	ts := startServer(t)
	ts.loadList(t, "l", "kept")
	released := make(chan struct{})
	close(released)
	ts.mem.StartRecording(&heldRecorder{release: released, max: 64})
	post := func(target, body string) answer {
		t.Helper()
		a := ts.do(t, http.MethodPost, target, "text/plain", body)
		ts.checkCommandAnswer(t, target, a)
		return a
	}
	tooLarge := koBody("Limit exceeded: journal-record-bytes=64 !")
	if a := post("/sts/LOAD?FILENAME=l", strings.Repeat("line\n", 20)); a.body != tooLarge {
		t.Errorf("LOAD REPLACE of 100 bytes: %q, want %q", a.body, tooLarge)
	}
	if a := post("/sts/LOAD?FILENAME=m&MODE=LAST", strings.Repeat("line\n", 20)); a.body != tooLarge {
		t.Errorf("LOAD LAST of 100 bytes into a new list: %q, want %q", a.body, tooLarge)
	}
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=l&FORMAT=JSON", "text/plain", strings.Repeat("line\n", 20)); a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("JSON answer to a LOAD too large to journal: HTTP %d, want 413", a.status)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=m", koBody("m not loaded yet !"))
	if got := ts.lines(t, "l"); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("list after refused LOADs: %q", got)
	}
	ts.writeFile(t, "big.csv", strings.Repeat("line\n", 20))
	ts.expect(t, "/sts/INITFILE?FILENAME=big.csv", tooLarge)
	if a := post("/sts/LOAD?FILENAME=l&MODE=LAST", "a\nb\n"); a.body != okBody("2") {
		t.Errorf("a small LOAD: %q", a.body)
	}
}

// A READ that finds the list empty because of a consume still being recorded answers only once
// that consume is durable; so does LENGTH. Otherwise a crash could bring the line back after
// clients were told there was none.
func TestAnswersWaitForTheConsumeTheyCount(t *testing.T) {
	requireMemory(t, "the journal is the memory backend's")
	ts := startServer(t)
	ts.loadList(t, "coupons", "c1")
	rec := &heldRecorder{release: make(chan struct{})}
	ts.mem.StartRecording(rec)
	consumed := make(chan string, 1)
	go func() { consumed <- ts.get(t, "/sts/READ?FILENAME=coupons&KEEP=FALSE") }()
	// Lists, unlike Length, does not wait for the consume's record.
	testutil.Until(t, 10*time.Second, time.Millisecond, "the line consumed", func() bool {
		lists, _ := ts.store.Lists(context.Background())
		return lists[0].Length == 0
	})
	answers := make(chan string, 2)
	for _, target := range []string{"/sts/READ?FILENAME=coupons", "/sts/LENGTH?FILENAME=coupons"} {
		go func() { answers <- ts.get(t, target) }()
	}
	// The consume, the READ and LENGTH all wait for the consume's record.
	testutil.Until(t, 10*time.Second, time.Millisecond, "READ and LENGTH waiting for the consume's record", func() bool {
		select {
		case a := <-answers:
			t.Fatalf("answered %q while the consume was not durable", a)
		default:
		}
		return rec.waiting.Load() == 3
	})
	close(rec.release)
	if got := <-consumed; got != okBody("c1") {
		t.Errorf("the consume answered %q", got)
	}
	got := []string{<-answers, <-answers}
	slices.Sort(got)
	if want := []string{koBody("No more line !"), okBody("0")}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
}

// The outcome of a change made with a REQUEST_ID is journaled with the change: a client whose
// server stopped before answering gets, from the restarted server, the line its READ took and the
// lease its leased READ was given, from the snapshot or the journal's records after it.
func TestRequestIDOutcomesSurviveARestart(t *testing.T) {
	state := t.TempDir()
	first := startJournaledServer(t, state, journal.Options{})
	first.srv.LoadAtStartup(context.Background())
	first.loadList(t, "q", "a", "b", "c", "d")
	read := "/sts/READ?FILENAME=q&KEEP=FALSE&REQUEST_ID=before-snapshot"
	first.expect(t, read, okBody("a"))
	if err := first.journal.Snapshot(); err != nil {
		t.Fatal(err)
	}
	leased := "/sts/READ?FILENAME=q&LEASE=600000&REQUEST_ID=after-snapshot"
	lease := first.do(t, http.MethodGet, leased, "", "")
	first.srv.Drain()
	if err := first.journal.Close(); err != nil {
		t.Fatal(err)
	}

	second := startJournaledServer(t, state, journal.Options{})
	second.srv.LoadAtStartup(context.Background())
	second.expect(t, read, okBody("a"))
	sameAnswer(t, leased, lease, second.do(t, http.MethodGet, leased, "", ""))
	second.checkLines(t, "q", "c", "d")
}
