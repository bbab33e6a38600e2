package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

var ctx = context.Background()

// open opens dir into a new store and closes the journal at the end of the test.
func open(t testing.TB, dir string, opts Options) (*memory.Memory, *Journal, *testutil.Buffer) {
	t.Helper()
	logs := &testutil.Buffer{}
	opts.Log = slog.New(slog.NewTextHandler(logs, nil))
	m := memory.New()
	j, err := Open(ctx, dir, m, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return m, j, logs
}

// contents is every list of a store with its lines.
func contents(t testing.TB, m *memory.Memory) map[string][]string {
	t.Helper()
	all := map[string][]string{}
	for _, l := range lengths(m) {
		lines, err := m.Lines(context.Background(), l.Name)
		if err != nil {
			t.Fatal(err)
		}
		all[l.Name] = lines
	}
	return all
}

// leaseCounts is, for every list of m, its lines leased, returned and dead-lettered.
func leaseCounts(m *memory.Memory) map[string]string {
	counts := map[string]string{}
	for _, l := range lengths(m) {
		counts[l.Name] = fmt.Sprint(l.Leased, l.Returned, l.DeadLettered)
	}
	return counts
}

func sameContents(t testing.TB, got, want map[string][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d lists restored, want %d", len(got), len(want))
	}
	for name, lines := range want {
		if g, ok := got[name]; !ok || !slices.Equal(g, lines) {
			t.Fatalf("list %q restored as %d lines %.200q, want %d lines %.200q", name, len(g), g, len(lines), lines)
		}
	}
}

// churn runs random operations of every kind on m, RANDOM picks and leases included; the leases
// run for an hour, so that none expires during a test.
func churn(t testing.TB, m *memory.Memory, seed uint64, steps int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	names := []string{"a", "b", "c", "", "ünï\x00code"}
	var leases []string
	for i := range steps {
		name := names[r.IntN(len(names))]
		line := fmt.Sprintf("line-%d-%d", seed, i)
		var err error
		switch k := r.IntN(100); {
		case k < 10:
			var le store.Lease
			if le, err = m.ReadLeased(ctx, name, store.Position(r.IntN(3)), 1+r.IntN(2), store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 2}, 0); err == nil {
				leases = append(leases, le.ID)
			}
		case k < 16 && len(leases) > 0:
			ref := store.LeaseRef{ID: leases[r.IntN(len(leases))]}
			if k < 12 {
				err = m.Ack(ctx, ref)
			} else {
				err = m.Release(ctx, ref, store.Position(r.IntN(2)))
			}
			if errors.Is(err, store.ErrLeaseNotFound) || errors.As(err, new(*store.LeaseEndedError)) {
				err = nil // acknowledged or released already
			}
		}
		checkChurn(t, i, err)
		switch k := r.IntN(100); {
		case k < 35:
			err = m.Add(context.Background(), name, line, store.Position(r.IntN(2)), r.IntN(4) == 0)
		case k < 60:
			_, err = m.Read(ctx, name, store.Position(r.IntN(3)), 1+r.IntN(3), r.IntN(2) == 0, 0)
		case k < 70:
			_, err = m.Find(ctx, name, func(l string) (bool, error) { return strings.HasSuffix(l, "7"), nil }, r.IntN(2) == 0, 0)
		case k < 78:
			lines := make([]string, r.IntN(50))
			for n := range lines {
				lines[n] = fmt.Sprintf("%s-r%d", line, n)
			}
			err = m.Replace(context.Background(), name, lines, "")
		case k < 88:
			err = m.Insert(context.Background(), name, []string{line + "-x", line + "-y"}, store.Position(r.IntN(2)))
		case k < 92:
			_, err = m.Reset(context.Background(), name)
		default:
			err = m.Ensure(context.Background(), fmt.Sprintf("e%d", r.IntN(3)))
		}
		checkChurn(t, i, err)
	}
}

// checkChurn fails the test on an error that churn's step did not expect.
func checkChurn(t testing.TB, step int, err error) {
	t.Helper()
	var short *store.ShortListError
	if err != nil && !errors.Is(err, store.ErrEmpty) && !errors.Is(err, store.ErrNotLoaded) &&
		!errors.Is(err, store.ErrNoMatch) && !errors.Is(err, store.ErrDuplicate) && !errors.As(err, &short) {
		t.Fatalf("step %d: %v", step, err)
	}
}

// TestRestoreGivesTheExactLists checks that reopening a state directory gives every list line for
// line, with and without snapshots on the way, and across several restarts.
func TestRestoreGivesTheExactLists(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"journal only", Options{}},
		{"snapshots", Options{SnapshotBytes: 2 << 10}},
		{"interval", Options{Policy: Interval, Interval: time.Millisecond, SnapshotBytes: 8 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var want map[string][]string
			var wantLeases map[string]string
			check := func(m *memory.Memory) {
				t.Helper()
				sameContents(t, contents(t, m), want)
				if got := leaseCounts(m); !maps.Equal(got, wantLeases) {
					t.Fatalf("leased, returned, dead-lettered: %v, want %v", got, wantLeases)
				}
			}
			for restart := range 4 {
				m, j, _ := open(t, dir, tc.opts)
				if restart > 0 {
					check(m)
				}
				churn(t, m, uint64(restart), 1500)
				want, wantLeases = contents(t, m), leaseCounts(m)
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
			}
			m, _, _ := open(t, dir, tc.opts)
			check(m)
		})
	}
}

// TestSnapshotBoundsTheJournal checks that snapshots replace the segments they cover.
func TestSnapshotBoundsTheJournal(t *testing.T) {
	dir := t.TempDir()
	m, j, _ := open(t, dir, Options{SnapshotBytes: 4 << 10})
	for i := range 5000 {
		if err := m.Add(context.Background(), "l", fmt.Sprintf("line-%d", i), store.Last, false); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Read(ctx, "l", store.First, 1, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if size := j.Size(); size > 64<<10 {
		t.Errorf("the state directory holds %d bytes for an empty list after 10 000 changes", size)
	}
	segments, snapshots, _, err := j.files()
	if err != nil || len(snapshots) != 1 || len(segments) > 2 {
		t.Errorf("segments %v, snapshots %v (%v): want one snapshot and the segments after it", segments, snapshots, err)
	}
}

// addLines makes a journal of n adds to list "l" and returns the path of its segment.
func addLines(t *testing.T, dir string, n int) string {
	t.Helper()
	m, j, _ := open(t, dir, Options{})
	for i := range n {
		if err := m.Add(context.Background(), "l", fmt.Sprintf("line-%03d", i), store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	segments, _, _, _ := j.files()
	return filepath.Join(dir, segmentName(segments[len(segments)-1]))
}

// recordOffsets returns the offset of every record of a segment.
func recordOffsets(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &frameReader{path: path, data: data, off: len(segmentMagic)}
	var offsets []int
	for {
		at := r.off
		if _, err := r.next(); err != nil {
			return offsets
		}
		offsets = append(offsets, at)
	}
}

func numberedLines(from, to int) []string {
	var lines []string
	for i := from; i < to; i++ {
		lines = append(lines, fmt.Sprintf("line-%03d", i))
	}
	return lines
}

// TestTornTailIsDropped cuts the last record at every byte, and extends a file with zeros as a
// file system may after a crash: the record is dropped, the others restored, the file truncated.
func TestTornTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	path := addLines(t, dir, 20)
	whole, _ := os.ReadFile(path)
	offsets := recordOffsets(t, path)
	last := offsets[len(offsets)-1]
	damages := map[string][]byte{
		"zeros after the end": append(slices.Clone(whole), make([]byte, 100)...),
		"last record zeroed":  append(slices.Clone(whole[:last]), make([]byte, len(whole)-last)...),
	}
	for cut := last + 1; cut < len(whole); cut++ {
		damages[fmt.Sprintf("cut at %d", cut)] = whole[:cut]
	}
	for name, data := range damages {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, data, 0o640); err != nil {
				t.Fatal(err)
			}
			m, j, logs := open(t, dir, Options{})
			want := numberedLines(0, 19)
			if name == "zeros after the end" {
				want = numberedLines(0, 20)
			}
			sameContents(t, contents(t, m), map[string][]string{"l": want})
			if !strings.Contains(logs.String(), "Dropped a torn record") || !strings.Contains(logs.String(), path) {
				t.Errorf("the drop is not logged with the path:\n%s", logs)
			}
			if info, _ := os.Stat(path); info.Size() > int64(len(whole)) || info.Size() < int64(last) {
				t.Errorf("the segment is %d bytes after the drop, want the %d before the torn record", info.Size(), last)
			}
			_ = j.Close()
			if err := os.Remove(filepath.Join(dir, segmentName(j.segment))); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		})
	}
}

// TestCorruptionIsRefused damages records that are not the end of the journal: Open must fail
// and name the file and the record's offset.
func TestCorruptionIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(data []byte, offsets []int) ([]byte, int)
	}{
		{"bit flip in a middle record", func(d []byte, o []int) ([]byte, int) { d[o[5]+frameHeader+2] ^= 1; return d, o[5] }},
		{"damaged length", func(d []byte, o []int) ([]byte, int) { d[o[7]] ^= 0x40; return d, o[7] }},
		{"garbage after the last record", func(d []byte, o []int) ([]byte, int) {
			return append(d, "garbage after the end, not zeros"...), len(d)
		}},
		{"bad magic", func(d []byte, _ []int) ([]byte, int) { d[0] = 'X'; return d, 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := addLines(t, dir, 20)
			data, _ := os.ReadFile(path)
			damaged, offset := tc.damage(data, recordOffsets(t, path))
			if err := os.WriteFile(path, damaged, 0o640); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, dir, memory.New(), Options{})
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || corrupt.Path != path || corrupt.Offset != int64(offset) {
				t.Fatalf("Open: %v, want a CorruptError at %s offset %d", err, path, offset)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprint(offset)) {
				t.Errorf("the error does not name the path and the offset: %v", err)
			}
		})
	}
}

// TestTornRecordInAnEarlierSegmentIsCorruption checks that only the last segment may be torn.
func TestTornRecordInAnEarlierSegmentIsCorruption(t *testing.T) {
	dir := t.TempDir()
	first := addLines(t, dir, 10)
	addLines(t, dir, 10) // a second run writes a second segment
	data, _ := os.ReadFile(first)
	if err := os.WriteFile(first, data[:len(data)-3], 0o640); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, dir, memory.New(), Options{})
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) || corrupt.Path != first {
		t.Fatalf("Open: %v, want a CorruptError in %s", err, first)
	}
}

// TestCorruptSnapshotIsRefused damages a snapshot in several ways.
func TestCorruptSnapshotIsRefused(t *testing.T) {
	makeSnapshot := func(t *testing.T) (string, string) {
		dir := t.TempDir()
		m, j, _ := open(t, dir, Options{})
		if err := m.Replace(context.Background(), "l", numberedLines(0, 3000), ""); err != nil {
			t.Fatal(err)
		}
		if err := m.Replace(context.Background(), "m", numberedLines(0, 10), ""); err != nil {
			t.Fatal(err)
		}
		if err := j.Snapshot(); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		_, snapshots, _, _ := j.files()
		return dir, filepath.Join(dir, snapshotName(snapshots[len(snapshots)-1]))
	}
	for name, damage := range map[string]func([]byte) []byte{
		"bit flip":   func(d []byte) []byte { d[len(d)/2] ^= 4; return d },
		"truncated":  func(d []byte) []byte { return d[:len(d)-5] },
		"no end":     func(d []byte) []byte { return d[:len(d)-frameHeader-3] },
		"bad magic":  func(d []byte) []byte { d[1] = 'x'; return d },
		"extra data": func(d []byte) []byte { return append(d, 0, 0, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			dir, path := makeSnapshot(t)
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, damage(data), 0o640); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, dir, memory.New(), Options{})
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || corrupt.Path != path {
				t.Fatalf("Open: %v, want a CorruptError in %s", err, path)
			}
		})
	}
	t.Run("intact", func(t *testing.T) {
		dir, _ := makeSnapshot(t)
		m, _, _ := open(t, dir, Options{})
		sameContents(t, contents(t, m), map[string][]string{"l": numberedLines(0, 3000), "m": numberedLines(0, 10)})
	})
}

// TestOneServerPerDirectory checks the lock: a second Open fails and names the holder; with
// WaitForLock it waits, then restores what the first left.
func TestOneServerPerDirectory(t *testing.T) {
	dir := t.TempDir()
	m, j, _ := open(t, dir, Options{})
	if err := m.Add(context.Background(), "l", "from the first", store.Last, false); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, dir, memory.New(), Options{})
	var locked *LockedError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d on", os.Getpid())) {
		t.Fatalf("second Open: %v, want a LockedError naming pid %d", err, os.Getpid())
	}

	second := memory.New()
	opened := make(chan error, 1)
	logs := &testutil.Buffer{}
	go func() {
		j2, err := Open(ctx, dir, second, Options{WaitForLock: true, Log: slog.New(slog.NewTextHandler(logs, nil))})
		if err == nil {
			t.Cleanup(func() { _ = j2.Close() })
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("Open with WaitForLock returned while the directory is held: %v", err)
	case <-time.After(3 * lockRetry):
	}
	if !strings.Contains(logs.String(), "Waiting for the state directory") {
		t.Errorf("the wait is not logged:\n%s", logs)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open with WaitForLock after the first closed: %v", err)
	}
	sameContents(t, contents(t, second), map[string][]string{"l": {"from the first"}})

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Open(cancelled, dir, memory.New(), Options{WaitForLock: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v", err)
	}
}

// TestGroupCommit has many goroutines record at once: every change must be acknowledged only after
// an fsync, and one fsync must cover many changes.
func TestGroupCommit(t *testing.T) {
	var syncs atomic.Int64
	m, j, _ := open(t, t.TempDir(), Options{ObserveSync: func(time.Duration) { syncs.Add(1) }})
	const writers, each = 32, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := m.Add(context.Background(), fmt.Sprint(w), fmt.Sprint(i), store.Last, false); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	changes := int64(writers * each)
	if n := syncs.Load(); n >= changes/2 || n == 0 {
		t.Errorf("%d fsyncs for %d changes: want group commits", n, changes)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFailureStallsAndRecovers breaks the segment under the writer (its descriptor closed,
// as a failing disk leaves one): the change in flight waits, later changes are refused before
// they are made (store.ErrUnavailable), reads that change nothing go on, the server does not
// stop (Failed stays open), and the journal recovers on its own: the change in flight is then
// acknowledged, and a restart has exactly the acknowledged lines.
func TestWriteFailureStallsAndRecovers(t *testing.T) {
	dir := t.TempDir()
	m, j, logs := open(t, dir, Options{RetryInterval: 20 * time.Millisecond})
	if err := m.Add(context.Background(), "l", "a", store.Last, false); err != nil {
		t.Fatal(err)
	}
	j.file.Close() // the next write fails, and so does every later one on this descriptor
	inFlight := make(chan error, 1)
	go func() { inFlight <- m.Add(context.Background(), "l", "b", store.Last, false) }()
	// The repair reopens the segment: until then the in-flight change waits; it is acknowledged
	// after, never refused.
	if err := <-inFlight; err != nil {
		t.Fatalf("the change in flight when the write failed: %v, want it acknowledged after the repair", err)
	}
	if err := j.Writable(); err != nil {
		t.Fatalf("not writable after the repair: %v", err)
	}
	select {
	case <-j.Failed():
		t.Fatal("Failed is closed: the server would stop")
	default:
	}
	if !strings.Contains(logs.String(), "The journal cannot write") || !strings.Contains(logs.String(), "The journal writes again") {
		t.Errorf("the stall and the recovery are not logged:\n%s", logs)
	}
	if err := m.Add(context.Background(), "l", "c", store.Last, false); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	m2, j2, _ := open(t, dir, Options{})
	defer j2.Close()
	sameContents(t, contents(t, m2), map[string][]string{"l": {"a", "b", "c"}})
}

// TestChangesRefusedWhileStalled holds the journal stalled (every repair fails while the
// segment is gone): changes are refused with store.ErrUnavailable and change nothing, reads that
// change nothing answer, and Close refuses the change that was in flight, which the restart
// does not have.
func TestChangesRefusedWhileStalled(t *testing.T) {
	dir := t.TempDir()
	m, j, _ := open(t, dir, Options{RetryInterval: 10 * time.Millisecond})
	if err := m.Add(context.Background(), "l", "a", store.Last, false); err != nil {
		t.Fatal(err)
	}
	j.file.Close()
	segment := filepath.Join(dir, segmentName(j.fileSegment))
	if err := os.Rename(segment, segment+".away"); err != nil { // every repair fails to reopen it
		t.Fatal(err)
	}
	inFlight := make(chan error, 1)
	go func() { inFlight <- m.Add(context.Background(), "l", "b", store.Last, false) }()
	for j.Writable() == nil {
		time.Sleep(time.Millisecond)
	}
	if err := m.Add(context.Background(), "l", "c", store.Last, false); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Add while stalled: %v, want ErrUnavailable", err)
	}
	if _, err := m.Read(context.Background(), "l", store.First, 1, false, 0); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a consuming Read while stalled: %v, want ErrUnavailable", err)
	}
	if n, err := m.Length(context.Background(), "l"); err != nil || n != 2 {
		t.Errorf("Length while stalled = %d, %v; want 2 (a, and b in flight)", n, err)
	}
	if lines, err := m.Lines(context.Background(), "l"); err != nil || len(lines) != 2 {
		t.Errorf("Lines while stalled = %q, %v", lines, err)
	}
	select {
	case err := <-inFlight:
		t.Fatalf("the change in flight answered %v while the journal cannot write", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := j.Close(); err == nil {
		t.Error("Close of a stalled journal reports no error")
	}
	if err := <-inFlight; !errors.Is(err, store.ErrNotRecorded) {
		t.Errorf("the change in flight at Close: %v, want ErrNotRecorded", err)
	}
	if err := os.Rename(segment+".away", segment); err != nil {
		t.Fatal(err)
	}
	m2, j2, _ := open(t, dir, Options{})
	defer j2.Close()
	sameContents(t, contents(t, m2), map[string][]string{"l": {"a"}})
}

// TestCloseRefusesLaterChanges checks that a change after Close is not acknowledged.
func TestCloseRefusesLaterChanges(t *testing.T) {
	m, j, _ := open(t, t.TempDir(), Options{})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(), "l", "late", store.Last, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v, want ErrClosed", err)
	}
}

// dumpHook runs before(name) during a snapshot, once the list name has been copied and before
// the next is: a client's change that lands while the snapshot is written.
type dumpHook struct {
	*memory.Memory
	before func(name string)
}

func (h *dumpHook) Dump(emit func(string, uint64, []string, []byte) error) error {
	return h.Memory.Dump(func(name string, seq uint64, lines []string, leases []byte) error {
		if h.before != nil {
			h.before(name)
		}
		return emit(name, seq, lines, leases)
	})
}

// A list copied into a snapshot after a change of its own carries that change's seq, above the
// snapshot's; its record is in the next segment, which a crash can lose. After a restart, new
// records must still be numbered above it, or the restart after that would skip them as applied.
func TestRecordsAfterARestartAreNumberedAboveTheSnapshotsLists(t *testing.T) {
	dir := t.TempDir()
	h := &dumpHook{Memory: memory.New()}
	j, err := Open(ctx, dir, h, Options{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"x0", "x1", "x2"} {
		if err := h.Add(context.Background(), "x", line, store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Add(context.Background(), "a", "a0", store.Last, false); err != nil {
		t.Fatal(err)
	}
	h.before = func(name string) {
		if name == "a" { // "a" is copied, "x" not yet
			h.before = nil
			if _, err := h.Read(ctx, "x", store.First, 1, false, 0); err != nil {
				t.Error(err)
			}
		}
	}
	if err := j.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// The crash lost the segment after the snapshot, and the READ's record with it.
	segments, snapshots, _, err := j.files()
	if err != nil || len(snapshots) != 1 || len(segments) != 1 || segments[0] != snapshots[0] {
		t.Fatalf("segments %v, snapshots %v, %v: want the snapshot and the segment after it", segments, snapshots, err)
	}
	if err := os.Remove(filepath.Join(dir, segmentName(segments[0]))); err != nil {
		t.Fatal(err)
	}

	m, j, _ := open(t, dir, Options{})
	if _, err := m.Read(ctx, "x", store.First, 1, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(), "x", "added", store.Last, false); err != nil {
		t.Fatal(err)
	}
	want := contents(t, m)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	restored, _, _ := open(t, dir, Options{})
	sameContents(t, contents(t, restored), want)
}

// lengths is every list of m with its length, sorted by name.
func lengths(m *memory.Memory) []store.ListInfo {
	infos, _ := m.Lists(context.Background())
	return infos
}

// A state directory missing its snapshot, or a segment in the middle of its journal, is refused
// with the missing file named; restoring it would give the lists with changes missing.
func TestGapsAreRefused(t *testing.T) {
	build := func(t *testing.T) string {
		dir := t.TempDir()
		m, j, _ := open(t, dir, Options{})
		add := func(line string) {
			if err := m.Add(ctx, "l", line, store.Last, false); err != nil {
				t.Fatal(err)
			}
		}
		add("a")
		if err := j.Snapshot(); err != nil { // snapshot-2, segment 2 created with it
			t.Fatal(err)
		}
		add("b")
		next := func() { // a new segment without a snapshot, as a snapshot that fails leaves
			j.mu.Lock()
			j.segment++
			j.batches = append(j.batches, newBatch(j.segment))
			j.mu.Unlock()
		}
		next()
		add("c")
		next()
		add("d")
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("intact", func(t *testing.T) {
		m, _, _ := open(t, build(t), Options{})
		sameContents(t, contents(t, m), map[string][]string{"l": {"a", "b", "c", "d"}})
	})
	for _, c := range []struct{ remove, want string }{
		{snapshotName(2), "snapshot-00000000000000000002.snap is missing (journal-00000000000000000002.log does not start the journal"},
		{segmentName(3), "journal-00000000000000000003.log is missing (journal-00000000000000000002.log is followed by journal-00000000000000000004.log)"},
		{segmentName(2), "journal-00000000000000000002.log is missing (snapshot-00000000000000000002.snap is followed by journal-00000000000000000003.log)"},
	} {
		t.Run(c.remove, func(t *testing.T) {
			dir := build(t)
			if err := os.Remove(filepath.Join(dir, c.remove)); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, dir, memory.New(), Options{})
			var gap *GapError
			if !errors.As(err, &gap) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open without %s: %v; want a *GapError saying %q", c.remove, err, c.want)
			}
		})
	}
}
