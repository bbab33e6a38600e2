package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// tape is a Recorder that keeps the records in memory; max bounds a record (0: no bound). Lease
// expiries record from their timers' goroutines: all reads of records go through replayInto.
type tape struct {
	mu      sync.Mutex
	records [][]byte
	max     int64
}

func (tp *tape) Record(change []byte) (uint64, Commit) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.records = append(tp.records, slices.Clone(change))
	return uint64(len(tp.records)), committed{}
}

// replayInto replays every record so far into m.
func (tp *tape) replayInto(t *testing.T, m *Memory) {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for i, r := range tp.records {
		if err := m.Replay(uint64(i+1), r); err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
	}
}

func (tp *tape) MaxChange() int64 {
	if tp.max == 0 {
		return math.MaxInt64
	}
	return tp.max
}

// A bulk change whose record the recorder could not take is refused before it is made, whatever
// the line lengths (their uvarint lengths grow at 128 bytes): the lists stay as they were and
// nothing is recorded. Every change let through fits.
func TestBulkChangeTooLargeToRecordIsRefused(t *testing.T) {
	const max = 400
	for _, lineLen := range []int{0, 1, 127, 128, 200} {
		m := New()
		rec := &tape{max: max}
		m.StartRecording(rec)
		if err := m.Replace(ctx, "listed", []string{"kept"}, ""); err != nil {
			t.Fatal(err)
		}
		for n := 1; n < 2*max; n++ {
			lines := slices.Repeat([]string{strings.Repeat("x", lineLen)}, n)
			records := len(rec.records)
			errReplace := m.Replace(ctx, "listed", lines, "")
			fresh := fmt.Sprintf("n%05d", n) // as long as "listed": the same bound
			errInsert := m.Insert(ctx, fresh, lines, store.Last)
			var limit *store.LimitError
			if errReplace == nil && errInsert == nil {
				for _, r := range rec.records[records:] {
					if len(r) > max {
						t.Fatalf("lines of %d bytes: a change of %d lines made a record of %d bytes, over %d", lineLen, n, len(r), max)
					}
				}
				if err := m.Replace(ctx, "listed", []string{"kept"}, ""); err != nil {
					t.Fatal(err)
				}
				continue
			}
			for _, err := range []error{errReplace, errInsert} {
				if !errors.As(err, &limit) || limit.Limit != store.LimitRecordBytes || limit.Max != max {
					t.Fatalf("lines of %d bytes, %d lines: %v, want a %s limit", lineLen, n, err, store.LimitRecordBytes)
				}
			}
			if got, _ := m.Lines(ctx, "listed"); !slices.Equal(got, []string{"kept"}) {
				t.Errorf("a refused Replace changed the list: %d lines", len(got))
			}
			if _, err := m.Lines(ctx, fresh); err == nil {
				t.Error("a refused Insert created its list")
			}
			if len(rec.records) != records {
				t.Errorf("refused changes were recorded")
			}
			// And the bound is tight: the same Insert, recorded, is within its slack of the limit
			// (the name's length, a Replace's opcode and count: 2 uvarints and a byte).
			free := New()
			unbounded := &tape{}
			free.StartRecording(unbounded)
			if err := free.Insert(ctx, fresh, lines, store.First); err != nil {
				t.Fatal(err)
			}
			if size := len(unbounded.records[0]); size <= max-2*binary.MaxVarintLen64-1 {
				t.Errorf("lines of %d bytes, %d lines: refused, but their record is %d bytes, well under %d", lineLen, n, size, max)
			}
			break
		}
	}
}

func contentsOf(t *testing.T, m *Memory) map[string][]string {
	t.Helper()
	all := map[string][]string{}
	for _, l := range lengths(m) {
		all[l.Name], _ = m.Lines(ctx, l.Name)
	}
	return all
}

// TestReplayReproducesTheLists records random operations (RANDOM picks included) and replays the
// records in a fresh store: the lists must be equal line for line, and the random source is not
// consulted again.
func TestReplayReproducesTheLists(t *testing.T) {
	m := New()
	m.intN = rand.New(rand.NewPCG(1, 2)).IntN
	rec := &tape{}
	m.StartRecording(rec)
	mo := &model{lists: map[string][]string{}, intN: rand.New(rand.NewPCG(1, 2)).IntN}
	ops := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		runModelStep(t, ops, m, mo)
	}
	if err := m.Insert(ctx, "bulk", []string{"x", "y"}, store.First); err != nil {
		t.Fatal(err)
	}
	replayed := New()
	replayed.intN = func(int) int { t.Fatal("a replay drew a random index"); return 0 }
	rec.replayInto(t, replayed)
	if want, got := contentsOf(t, m), contentsOf(t, replayed); !maps.EqualFunc(want, got, slices.Equal) {
		t.Fatalf("replayed lists differ from the recorded ones")
	}
	checkInvariants(t, replayed)

	// Records the list already holds are skipped: replaying everything again changes nothing.
	rec.replayInto(t, replayed)
	if want, got := contentsOf(t, m), contentsOf(t, replayed); !maps.EqualFunc(want, got, slices.Equal) {
		t.Fatalf("a second replay changed the lists")
	}
}

func TestReplayRefusesMalformedRecords(t *testing.T) {
	for name, record := range map[string]string{
		"no name":           "",
		"name too long":     "\x05ab",
		"unknown step":      "\x01lZ",
		"remove past end":   "\x01lr\x05",
		"keep unremoved":    "\x01lk\x01",
		"line too long":     "\x01lb\x09abc",
		"replace too many":  "\x01lR\x09\x01a",
		"unfinished number": "\x01lr\x80",
	} {
		t.Run(name, func(t *testing.T) {
			if err := New().Replay(1, []byte(record)); !errors.Is(err, errMalformed) {
				t.Fatalf("Replay(%q) = %v, want a malformed record", record, err)
			}
		})
	}
}

// held is a Recorder whose records become durable only when the test releases them.
type held struct {
	release chan struct{}
	records int
}

type heldCommit struct{ release chan struct{} }

func (c heldCommit) Wait() error { <-c.release; return nil }

func (h *held) Record([]byte) (uint64, Commit) {
	h.records++
	return uint64(h.records), heldCommit{h.release}
}

func (h *held) MaxChange() int64 { return math.MaxInt64 }

// An answer that changed nothing is not given before the change it depends on is durable: a
// RESET or a "No more line" after a consume still being recorded would otherwise be undone by
// a crash, the consumed line back in a list its clients were told was empty.
func TestAnswersWaitForTheChangeTheyDependOn(t *testing.T) {
	m := New()
	if err := m.Add(ctx, "coupons", "c1", store.Last, false); err != nil {
		t.Fatal(err)
	}
	rec := &held{release: make(chan struct{})}
	m.StartRecording(rec)
	consumed := make(chan error, 1)
	go func() {
		_, err := m.Read(context.Background(), "coupons", store.First, 1, false, 0)
		consumed <- err
	}()
	for lengths(m)[0].Length != 0 { // the consume has taken the line; its record is held
		time.Sleep(time.Millisecond)
	}
	answers := make(chan string, 3)
	go func() {
		_, err := m.Read(context.Background(), "coupons", store.First, 1, false, 0)
		answers <- fmt.Sprint("READ: ", err)
	}()
	go func() {
		_, err := m.Reset(ctx, "coupons")
		answers <- fmt.Sprint("RESET: ", err)
	}()
	go func() {
		err := m.Add(ctx, "coupons", "c2", store.Last, false)
		answers <- fmt.Sprint("ADD: ", err) // a change: recorded, held like the consume
	}()
	select {
	case a := <-answers:
		t.Fatalf("answered before the consume was durable: %s", a)
	case <-time.After(100 * time.Millisecond):
	}
	close(rec.release)
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, <-answers)
	}
	slices.Sort(got)
	if want := []string{"ADD: <nil>", "READ: " + store.ErrEmpty.Error(), "RESET: <nil>"}; !slices.Equal(got, want) && !slices.Equal(got, []string{"ADD: <nil>", "READ: <nil>", "RESET: <nil>"}) {
		t.Errorf("answers %q", got)
	}
}

// An ADD whose line alone would make a record too large for the recorder is refused too, before
// the list changes (a --max-body-bytes above the journal's limit would let one through).
func TestAddTooLargeToRecordIsRefused(t *testing.T) {
	m := New()
	m.StartRecording(&tape{max: 64})
	if err := m.Add(ctx, "l", "short", store.Last, false); err != nil {
		t.Fatal(err)
	}
	var limit *store.LimitError
	if err := m.Add(ctx, "l", strings.Repeat("x", 64), store.Last, false); !errors.As(err, &limit) || limit.Limit != store.LimitRecordBytes {
		t.Fatalf("Add of a 64-byte line under a 64-byte record limit: %v", err)
	}
	if got, _ := m.Lines(ctx, "l"); !slices.Equal(got, []string{"short"}) {
		t.Errorf("after the refused Add: %q", got)
	}
}
