package memory

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// queueReads starts n reads of one line of list name that wait, each queued before the next
// starts, and returns the channels that their lines arrive on.
func queueReads(t *testing.T, m *Memory, name string, n int) []chan []string {
	t.Helper()
	answers := make([]chan []string, n)
	for i := range answers {
		answers[i] = make(chan []string, 1)
		go func() {
			lines, err := m.Read(ctx, name, store.First, 1, false, time.Minute)
			if err != nil {
				t.Error(err)
			}
			answers[i] <- lines
		}()
		deadline := time.Now().Add(10 * time.Second)
		for m.Waiting() != i+1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	if m.Waiting() != n {
		t.Fatalf("%d reads wait, want %d", m.Waiting(), n)
	}
	return answers
}

// answer is the lines that a read of queueReads got.
func answer(t *testing.T, lines <-chan []string) []string {
	t.Helper()
	select {
	case got := <-lines:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not return")
		return nil
	}
}

// TestWaitingReadsAreServedInArrivalOrder queues reads on an empty list, then adds lines one at
// a time: the i-th read gets the i-th line.
func TestWaitingReadsAreServedInArrivalOrder(t *testing.T) {
	m := storeWith([]string{})
	const readers = 20
	waiting := queueReads(t, m, "l", readers)
	for i := range readers {
		if err := m.Add(ctx, "l", fmt.Sprint(i), store.Last, false); err != nil {
			t.Fatal(err)
		}
		if got := answer(t, waiting[i]); !slices.Equal(got, []string{fmt.Sprint(i)}) {
			t.Fatalf("read %d got %q, want line %d", i, got, i)
		}
	}
	if m.Waiting() != 0 {
		t.Fatalf("%d reads still waiting", m.Waiting())
	}
	checkLines(t, m, "l", []string{})
}

// TestAWaitingReadBeatsALaterOne checks that a line that arrives goes to the read that waits,
// not to one that comes after the line: the add serves the queue before it returns.
func TestAWaitingReadBeatsALaterOne(t *testing.T) {
	m := storeWith([]string{})
	first := queueReads(t, m, "l", 1)[0]
	if err := m.Add(ctx, "l", "x", store.Last, false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Read(ctx, "l", store.First, 1, false, 0); !errors.Is(err, store.ErrEmpty) {
		t.Fatalf("a later read: %v, want ErrEmpty", err)
	}
	if got := answer(t, first); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("the waiting read got %q", got)
	}
}

// TestPendingListsAreDropped checks that the pending list that reads wait on for a list nobody
// created goes away with them: when their wait ends, and when the list is created.
func TestPendingListsAreDropped(t *testing.T) {
	pending := func(m *Memory) int {
		m.mu.RLock()
		defer m.mu.RUnlock()
		return len(m.pending)
	}
	m := New()
	if _, err := m.Read(ctx, "nope", store.First, 1, false, 20*time.Millisecond); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("a read of a list never created: %v", err)
	}
	if n := pending(m); n != 0 {
		t.Fatalf("%d pending lists left after the wait", n)
	}
	read := queueReads(t, m, "later", 1)[0]
	if n := pending(m); n != 1 {
		t.Fatalf("%d pending lists while a read waits for one", n)
	}
	if err := m.Replace(ctx, "later", []string{"a"}, ""); err != nil {
		t.Fatal(err)
	}
	if got := answer(t, read); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("the waiting read got %q", got)
	}
	if n := pending(m); n != 0 {
		t.Fatalf("%d pending lists left after the list was created", n)
	}
}

// TestWaitingFindsAreServedInArrivalOrder queues FINDs that all accept the same lines, then adds
// them one at a time: the i-th FIND gets the i-th line, though the matches run off the lock.
func TestWaitingFindsAreServedInArrivalOrder(t *testing.T) {
	m := storeWith([]string{"hay"})
	const finds = 10
	answers := make([]chan string, finds)
	for i := range answers {
		answers[i] = make(chan string, 1)
		go func() {
			line, err := m.Find(ctx, "l", func(s string) (bool, error) { return s != "hay", nil }, false, time.Minute)
			if err != nil {
				t.Error(err)
			}
			answers[i] <- line
		}()
		deadline := time.Now().Add(10 * time.Second)
		for m.Waiting() != i+1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	for i := range finds {
		if err := m.Add(ctx, "l", fmt.Sprint(i), store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := range finds {
		select {
		case got := <-answers[i]:
			if got != fmt.Sprint(i) {
				t.Errorf("FIND %d got %q, want line %d", i, got, i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("FIND %d did not return", i)
		}
	}
	checkLines(t, m, "l", []string{"hay"})
}
