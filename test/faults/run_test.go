package faults

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// workload is what the clients of a cycle do.
type workload struct {
	mixed   int // clients mixing every operation on the cycle's list
	readers int // clients only reading KEEP=FALSE (READ FIRST), the scenarios
	fifo    int // clients of READ FIRST and ADD LAST on a list of their own, for Porcupine
	lines   int // lines the cycle's list is loaded with
	// think bounds the pause of a mixed client or reader between two operations; the FIFO
	// clients pause longer, so that their history stays short enough for Porcupine.
	think time.Duration
	// before and after are how long the clients run before the fault and after it is healed.
	before, after time.Duration
}

// mixedLoad is the nemesis tests' workload.
var mixedLoad = workload{mixed: 12, fifo: 3, lines: 3000, think: 10 * time.Millisecond, before: time.Second, after: 1500 * time.Millisecond}

// run is one cluster's sequence of cycles, one history clock, and their checks.
type run struct {
	t      *testing.T
	c      *cluster
	label  string // the backend's, in the figures
	start  time.Time
	checks sync.WaitGroup
}

func newRun(t *testing.T, c *cluster, label string) *run {
	r := &run{t: t, c: c, label: label, start: time.Now()}
	// When a nemesis fails the test: its checks' t.Errorf must not outlive the test.
	t.Cleanup(r.wait)
	return r
}

// cycle runs w's clients on lists of cycle n's own while nem does its fault (none when nil),
// stops them once they have run w.after past the healing, and checks the cycle's history in the
// background, while the next cycle runs: the check needs the cycle's leases ended.
func (r *run) cycle(n int, nem *nemesis, w workload) {
	t := r.t
	h := NewHistory(r.start)
	list, fifo := fmt.Sprintf("q%d", n), fmt.Sprintf("f%d", n)
	prefix := fmt.Sprintf("%s.%d", r.c.backend, n)
	rng := func(role string, i int) *rand.Rand { return rngFor(t.Name()+"/"+role, n*1000+i) }
	loaded := testutil.Numbered(list, w.lines)
	r.load(h, prefix, list, loaded)

	var stop atomic.Bool
	t.Cleanup(func() { stop.Store(true) }) // a nemesis that fails the test leaves no client running
	var clients sync.WaitGroup
	spawn := func(id int, role string, servers []string, body func(*Client)) {
		c := NewClient(h, id, servers, rng(role, id), prefix)
		c.ResendRate = 0.1
		clients.Go(func() {
			for !stop.Load() {
				body(c)
			}
		})
	}
	for i := range w.mixed {
		spawn(100+i, "mixed", r.c.bases(), func(c *Client) { mixedOp(c, list, w.think) })
	}
	for i := range w.readers {
		spawn(200+i, "reader", r.c.bases(), func(c *Client) { readOp(c, list, w.think) })
	}
	for i := range w.fifo {
		spawn(i, "fifo", r.c.bases(), func(c *Client) { fifoOp(c, fifo) })
	}

	time.Sleep(w.before)
	win := Window{Name: "none", Injected: h.Now(), Healed: h.Now()}
	if nem != nil {
		win = nem.run(t, r.c, h, rng("nemesis", 0))
	}
	time.Sleep(w.after)
	stop.Store(true)
	clients.Wait()

	r.checks.Go(func() { r.check(n, h, win, list, loaded, fifo, w.fifo > 0) })
}

// wait waits for the checks of every cycle.
func (r *run) wait() { r.checks.Wait() }

// load replaces list with lines, through the same retrying client as the workload's: a cycle
// starts once its list is loaded.
func (r *run) load(h *History, prefix, list string, lines []string) {
	c := NewClient(h, 999, r.c.bases(), rngFor(r.t.Name()+"/load", 0), prefix)
	op := c.NewOp(Load, "LOAD", list, url.Values{"MODE": {"REPLACE"}})
	op.Body = testutil.File(lines)
	c.Do(op)
	if a := op.Answer(); a == nil || !a.OK() {
		r.t.Fatalf("LOAD %s: %d attempts, the last %s", list, len(op.Attempts), describe(&op.Attempts[len(op.Attempts)-1]))
	}
}

// mixedOp runs one of the operations a queue's clients send, and for a leased READ what follows
// it: an ACK, a RELEASE, or nothing (the lease then runs out).
func mixedOp(c *Client, list string, think time.Duration) {
	defer pause(c, think)
	p := url.Values{}
	switch r := c.Rand.IntN(100); {
	case r < 30:
		p.Set("READ_MODE", []string{"FIRST", "LAST", "RANDOM"}[c.Rand.IntN(3)])
		p.Set("KEEP", "FALSE")
		c.Do(c.NewOp(Read, "READ", list, p))
	case r < 50:
		leased(c, list, 1000+c.Rand.IntN(1500), 300*time.Millisecond)
	case r < 58:
		p.Set("FIND_MODE", "SUBSTRING")
		p.Set("LINE", strconv.Itoa(c.Rand.IntN(10)))
		p.Set("KEEP", "FALSE")
		c.Do(c.NewOp(Find, "FIND", list, p))
	default:
		line := fmt.Sprintf("%s-a%d-%d", list, c.ID, c.n)
		unique := c.Rand.IntN(2) == 0
		p.Set("LINE", line)
		p.Set("ADD_MODE", []string{"FIRST", "LAST"}[c.Rand.IntN(2)])
		p.Set("UNIQUE", strings.ToUpper(strconv.FormatBool(unique)))
		op := c.NewOp(Add, "ADD", list, p)
		op.Line, op.Unique = line, unique
		c.Do(op)
	}
}

// leased reads a line under a lease of ms, holds it up to hold, then acknowledges it (one time
// in two), releases it (one in four) or lets it run out.
func leased(c *Client, list string, ms int, hold time.Duration) {
	p := url.Values{"READ_MODE": {[]string{"FIRST", "LAST"}[c.Rand.IntN(2)]}, "LEASE": {strconv.Itoa(ms)}}
	op := c.NewOp(LeaseRead, "READ", list, p)
	c.Do(op)
	a := op.Answer()
	if a == nil || !a.OK() || a.Answer.Lease == nil {
		return
	}
	time.Sleep(time.Duration(c.Rand.Int64N(int64(hold))))
	lease := *a.Answer.Lease
	switch r := c.Rand.IntN(4); {
	case r < 2:
		end := c.NewOp(Ack, "ACK", list, url.Values{"LEASE": {lease}})
		end.Lease = lease
		c.Do(end)
	case r < 3:
		end := c.NewOp(Release, "RELEASE", list, url.Values{"LEASE": {lease}})
		end.Lease = lease
		c.Do(end)
	}
}

// readOp is the client: READ KEEP=FALSE, a fresh REQUEST_ID per line.
func readOp(c *Client, list string, think time.Duration) {
	c.Do(c.NewOp(Read, "READ", list, url.Values{"READ_MODE": {"FIRST"}, "KEEP": {"FALSE"}}))
	pause(c, think)
}

// fifoOp is READ FIRST or ADD LAST on a list only the FIFO clients use, then a pause that keeps
// the history short: Porcupine's search grows exponentially with the operations in flight. Half
// the READs wait for a line (WAIT): the list is often empty, so that a server killed has requests
// in flight, whose retries must outlive it.
func fifoOp(c *Client, list string) {
	if c.Rand.IntN(2) == 0 {
		p := url.Values{"READ_MODE": {"FIRST"}, "KEEP": {"FALSE"}}
		if c.Rand.IntN(2) == 0 {
			p.Set("WAIT", "1000")
		}
		c.Do(c.NewOp(Read, "READ", list, p))
	} else {
		line := fmt.Sprintf("%s-%d-%d", list, c.ID, c.n)
		op := c.NewOp(Add, "ADD", list, url.Values{"LINE": {line}, "ADD_MODE": {"LAST"}})
		op.Line = line
		c.Do(op)
	}
	time.Sleep(100*time.Millisecond + time.Duration(c.Rand.Int64N(int64(150*time.Millisecond))))
}

func pause(c *Client, think time.Duration) {
	if think > 0 {
		time.Sleep(time.Duration(c.Rand.Int64N(int64(think))))
	}
}

// check waits for the cycle's leases to end, exports its lists, runs the checkers, and records
// the figures; a violation fails the test and writes the history.
func (r *run) check(n int, h *History, win Window, list string, loaded []string, fifo string, porc bool) {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ops := h.Ops()
	final, err := settled(ctx, r.c.bases(), list)
	if err != nil {
		t.Errorf("cycle %d (%s): %v", n, win.Name, err)
		return
	}
	v := CheckQueue(QueueInput{List: list, Loaded: loaded, Ops: Of(ops, list), Final: final})
	result := porcupine.CheckResult("")
	if porc {
		fifoFinal, err := settled(ctx, r.c.bases(), fifo)
		if err != nil {
			t.Errorf("cycle %d (%s): %v", n, win.Name, err)
			return
		}
		v.Merge(CheckQueue(QueueInput{List: fifo, Ops: Of(ops, fifo), Final: fifoFinal}))
		html := historyPath(t, n) + ".html"
		result, err = CheckFIFO(FIFOHistory(Of(ops, fifo), fifoFinal), 20*time.Second, html)
		if err != nil {
			t.Errorf("cycle %d: writing Porcupine's visualization: %v", n, err)
		}
		if result == porcupine.Illegal {
			v.problem("READ FIRST/ADD LAST on %s is not linearizable as a FIFO queue: %s", fifo, html)
		}
	}
	waits, ambiguous := RecoveryWaits(ops, win), Ambiguous(ops)
	figures.add(r.label, win.Name, &v, ambiguous, result, waits)
	t.Logf("cycle %d, %s (%v) on %s: %s, %d with an ambiguous attempt; FIFO %s; %d waits after healing, p50 %v, p99 %v", n, win.Name,
		(win.Healed - win.Injected).Round(100*time.Millisecond), r.label, v.String(), ambiguous, orNone(string(result)), len(waits), Percentile(waits, 50).Round(time.Millisecond), Percentile(waits, 99).Round(time.Millisecond))
	switch {
	case v.Failed():
		r.fail(n, win, &v, ops)
	case os.Getenv("STS_FAULT_KEEP_HISTORY") == "1":
		path, err := r.write(n, win, &v, ops)
		t.Logf("cycle %d: history %s %v", n, path, err)
	}
}

// write writes cycle n's history, violations first, and returns its path.
func (r *run) write(n int, win Window, v *Verdict, ops []*Op) (string, error) {
	header := map[string]any{"test": r.t.Name(), "seed": seed, "cycle": n, "backend": r.label, "fault": win, "verdict": v.String(), "problems": v.Problems}
	return WriteHistory(filepath.Dir(historyPath(r.t, n)), filepath.Base(historyPath(r.t, n)), header, ops)
}

// fail fails the test with v's problems, and writes the history, violations first.
func (r *run) fail(n int, win Window, v *Verdict, ops []*Op) {
	t := r.t
	path, err := r.write(n, win, v, ops)
	if err != nil {
		t.Errorf("writing the history: %v", err)
	}
	shown := v.Problems[:min(len(v.Problems), 20)]
	t.Errorf("cycle %d, %s on %s: %s (seed %d); history, violations first: %s\n\t%s", n, win.Name, r.label, v.String(), seed, path, strings.Join(shown, "\n\t"))
}

// historyPath is where cycle n's history goes when it fails (STS_FAULT_HISTORY_DIR, else the
// temporary directory), without its extension.
func historyPath(t *testing.T, n int) string {
	dir := os.Getenv("STS_FAULT_HISTORY_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sts-faults")
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return filepath.Join(dir, fmt.Sprintf("%s-seed%d-cycle%d", name, seed, n))
}

// settled returns list's lines once no lease holds any of them (every lease of the cycle has
// run out or ended), so that what the list should hold is in it.
func settled(ctx context.Context, servers []string, list string) ([]string, error) {
	for {
		status, err := Get(ctx, servers, "STATUS", "FORMAT=JSON")
		if err != nil {
			return nil, err
		}
		leased := int64(0)
		for _, l := range status.Lists {
			if l.Name == list {
				leased = l.Leased
			}
		}
		if leased == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %d lines still leased", list, leased)
		case <-time.After(250 * time.Millisecond):
		}
	}
	return export(ctx, servers, list)
}

// export is the list's lines, exactly (EXPORT in JSON); a list never created has none.
func export(ctx context.Context, servers []string, list string) ([]string, error) {
	query := url.Values{"FILENAME": {list}, "FORMAT": {"JSON"}}.Encode()
	for i := 0; ; i++ {
		attempt, cancel := context.WithTimeout(ctx, 20*time.Second)
		status, answer, body, err := Send(attempt, http.MethodGet, servers[i%len(servers)], "EXPORT", query, "")
		cancel()
		switch {
		case status == http.StatusOK && answer != nil:
			return answer.Lines, nil
		case status == http.StatusNotFound && answer != nil && answer.Reason == "not_loaded":
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("EXPORT %s: %d %q %s", list, status, body, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "not checked"
	}
	return s
}

// figures gathers every check's counts by backend and fault, which TestMain prints at the end
// as the table docs/guarantees.md quotes.
var figures = &figureTable{rows: map[[2]string]*figureRow{}}

type figureTable struct {
	mu    sync.Mutex
	rows  map[[2]string]*figureRow
	order [][2]string
}

type figureRow struct {
	cycles    int
	ambiguous int
	v         Verdict
	fifo      map[porcupine.CheckResult]int
	waits     []time.Duration
}

func (f *figureTable) add(backend, fault string, v *Verdict, ambiguous int, fifo porcupine.CheckResult, waits []time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := [2]string{backend, fault}
	row := f.rows[key]
	if row == nil {
		row = &figureRow{fifo: map[porcupine.CheckResult]int{}}
		f.rows[key] = row
		f.order = append(f.order, key)
	}
	row.cycles++
	row.ambiguous += ambiguous
	row.v.Merge(Verdict{Lines: v.Lines, Ops: v.Ops, Lost: v.Lost, Duplicated: v.Duplicated, Unanswered: v.Unanswered, Unexpected: v.Unexpected, Wrong: v.Wrong})
	if fifo != "" {
		row.fifo[fifo]++
	}
	row.waits = append(row.waits, waits...)
}

// print writes the table in Markdown: make faults writes it into docs/faults.md (writeReport).
func (f *figureTable) print(w io.Writer, elapsed time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rows) == 0 {
		return
	}
	keys := slices.Clone(f.order)
	slices.SortStableFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	cycles := 0
	for _, row := range f.rows {
		cycles += row.cycles
	}
	fmt.Fprintf(w, "\nfaults: %d cycles in %v, seed %d, %s, %s\n\n", cycles, elapsed.Round(time.Second), seed, time.Now().UTC().Format("2006-01-02"), binaryLabel())
	fmt.Fprintln(w, "| backend | fault | cycles | operations (ambiguous) | lines | lost | duplicated | unanswered | other violations | FIFO linearizable | retrying clients' wait after healing, p50 / p99 (n) |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
	for _, k := range keys {
		row := f.rows[k]
		fifo := "—"
		if len(row.fifo) > 0 {
			var parts []string
			for _, r := range []porcupine.CheckResult{porcupine.Ok, porcupine.Illegal, porcupine.Unknown} {
				if row.fifo[r] > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", r, row.fifo[r]))
				}
			}
			fifo = strings.Join(parts, ", ")
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d (%d) | %d | %d | %d | %d | %d | %s | %v / %v (%d) |\n", k[0], k[1], row.cycles, row.v.Ops, row.ambiguous, row.v.Lines,
			row.v.Lost, row.v.Duplicated, row.v.Unanswered, row.v.Unexpected+row.v.Wrong, fifo,
			Percentile(row.waits, 50).Round(time.Millisecond), Percentile(row.waits, 99).Round(time.Millisecond), len(row.waits))
	}
}

func binaryLabel() string {
	switch {
	case os.Getenv("STS_FAULT_BINARY") != "":
		return "sts " + os.Getenv("STS_FAULT_BINARY")
	case os.Getenv("STS_FAULT_REF") != "":
		return "sts at " + os.Getenv("STS_FAULT_REF")
	}
	return "sts of the working tree"
}
