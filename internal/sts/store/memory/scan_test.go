package memory

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// stalledFind starts a Find of the lines containing sub whose first match stalls until the
// returned release is called, and waits until it does: the FIND is then scanning, off the lock.
func stalledFind(t *testing.T, m *Memory, sub string, wait time.Duration) (result <-chan string, release func()) {
	t.Helper()
	entered, result, release := startStalledFind(m, sub, wait)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the FIND never tested a line")
	}
	return result, release
}

// startStalledFind is stalledFind without the wait: entered is closed when the first match
// stalls.
func startStalledFind(m *Memory, sub string, wait time.Duration) (entered <-chan struct{}, result <-chan string, release func()) {
	enter, gate := make(chan struct{}), make(chan struct{})
	first := true
	match := func(line string) (bool, error) {
		if first {
			first = false
			close(enter)
			<-gate
		}
		return strings.Contains(line, sub), nil
	}
	done := make(chan string, 1)
	go func() {
		line, err := m.Find(ctx, "l", match, false, wait)
		if err != nil {
			line = "error: " + err.Error()
		}
		done <- line
	}()
	return enter, done, sync.OnceFunc(func() { close(gate) })
}

func resultOf(t *testing.T, done <-chan string) string {
	t.Helper()
	select {
	case line := <-done:
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("the FIND did not answer")
		return ""
	}
}

// A FIND whose regular expression takes its time holds up no change to its list: they are made
// while it tests, and it takes its hit where the changes moved it.
func TestFindTestsOffTheLock(t *testing.T) {
	m := New()
	m.Replace(ctx, "l", []string{"a", "b", "target", "c"}, "")
	done, release := stalledFind(t, m, "target", 0)
	changed := make(chan error, 1)
	go func() {
		_, err := m.Read(ctx, "l", store.First, 1, false, 0) // a: before the hit
		if err == nil {
			err = m.Add(ctx, "l", "z", store.First, false)
		}
		if err == nil {
			err = m.Add(ctx, "l", "end", store.Last, false)
		}
		changed <- err
	}()
	select {
	case err := <-changed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("changes to the list waited for a FIND's match")
	}
	release()
	if got := resultOf(t, done); got != "target" {
		t.Fatalf("FIND = %q, want target", got)
	}
	checkLines(t, m, "l", []string{"z", "b", "c", "end"})
}

// A hit another read takes while the FIND tests is passed over for the next one; a line added at
// the end meanwhile is met too.
func TestFindGoesOnWhenItsHitIsTaken(t *testing.T) {
	m := New()
	m.Replace(ctx, "l", []string{"a", "target-1", "b"}, "")
	done, release := stalledFind(t, m, "target", 0)
	// A FIND would wait for the stalled one's gate token (a single one on two processors).
	if _, err := m.Read(ctx, "l", store.First, 2, false, 0); err != nil { // a, target-1
		t.Fatal(err)
	}
	if err := m.Add(ctx, "l", "target-2", store.Last, false); err != nil {
		t.Fatal(err)
	}
	release()
	if got := resultOf(t, done); got != "target-2" {
		t.Fatalf("FIND = %q, want target-2", got)
	}
	checkLines(t, m, "l", []string{"b"})
}

// A waiting FIND is handed the lines added at the front while its first look scanned, which
// that look did not test: it takes one that matches at once instead of waiting on.
func TestWaitingFindTestsWhatArrivedAtTheFrontWhileItScanned(t *testing.T) {
	m := New()
	m.Replace(ctx, "l", []string{"a", "b"}, "")
	done, release := stalledFind(t, m, "target", time.Minute)
	if err := m.Add(ctx, "l", "target", store.First, false); err != nil {
		t.Fatal(err)
	}
	release()
	if got := resultOf(t, done); got != "target" {
		t.Fatalf("FIND = %q, want target", got)
	}
	checkLines(t, m, "l", []string{"a", "b"})
}

// The scan pages through a long list: a hit beyond the first pages is found, and changes made
// between pages move it correctly.
func TestFindScansPageAfterPage(t *testing.T) {
	m := New()
	lines := numbered(5 * findPage)
	m.Replace(ctx, "l", lines, "")
	want := lines[4*findPage+7]
	calls := 0
	match := func(line string) (bool, error) {
		if calls++; calls == findPage+1 { // testing the second page, off the lock
			read := make(chan error, 1)
			go func() { _, err := m.Read(ctx, "l", store.First, 3, false, 0); read <- err }()
			select {
			case err := <-read:
				if err != nil {
					return false, err
				}
			case <-time.After(10 * time.Second):
				t.Error("a READ waited for the FIND's match")
			}
		}
		return line == want, nil
	}
	got, err := m.Find(ctx, "l", match, false, 0)
	if err != nil || got != want {
		t.Fatalf("FIND = %q, %v; want %q", got, err, want)
	}
	if n, _ := m.Length(ctx, "l"); n != 5*findPage-4 {
		t.Fatalf("%d lines left, want %d", n, 5*findPage-4)
	}
}

// FINDs that overlap without end, each starting before the last ends, keep the scan log to the
// changes a running scan has yet to see, not every change since the first of them began.
func TestOverlappingFindsKeepTheScanLogShort(t *testing.T) {
	m := New()
	if err := m.Replace(ctx, "l", []string{"a", "b", "c"}, ""); err != nil {
		t.Fatal(err)
	}
	l := m.lookup("l")
	locked := func(f func()) {
		l.mu.Lock()
		defer l.mu.Unlock()
		f()
	}
	done, release := stalledFind(t, m, "none", 0)
	for round := range 3 {
		// 1 000 changes that move indexes, the list kept to one page, so that each FIND needs
		// the list's gate for one page only.
		for i := range 500 {
			if err := m.Add(ctx, "l", fmt.Sprintf("front %d %d", round, i), store.First, false); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Read(ctx, "l", store.First, 1, false, 0); err != nil {
				t.Fatal(err)
			}
		}
		// The next FIND begins its scan, and waits for the list's gate, which the stalled one holds.
		entered, next, releaseNext := startStalledFind(m, "none", 0)
		testutil.Until(t, 10*time.Second, time.Millisecond, "the next FIND to scan", func() bool {
			n := 0
			locked(func() { n = len(l.scanners) })
			return n == 2
		})
		release()
		if got := resultOf(t, done); !strings.HasPrefix(got, "error: ") {
			t.Fatalf("round %d: the FIND found %q", round, got)
		}
		<-entered
		n := 0
		locked(func() { n = len(l.scanLog) })
		if n != 0 {
			t.Fatalf("round %d: the scan log holds %d changes that the running FIND saw before it began", round, n)
		}
		done, release = next, releaseNext
	}
	release()
	resultOf(t, done)
}
