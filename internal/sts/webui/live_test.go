package webui

import (
	"context"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The overview's rates and time to empty come from the lengths sampled once a tick: a list read
// 10 lines a second shows -10/s over 10 s and over a minute, and empties in length/10 seconds; a
// list read and refilled at the same pace shows 0 and never empties. Its reads and adds a second
// come from the server's counts of each list's commands.
func TestRatesAndTimeToEmpty(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for name, n := range map[string]int{"drained": 2000, "steady": 50} {
		if err := st.Replace(ctx, name, testutil.Numbered(name, n), ""); err != nil {
			t.Fatal(err)
		}
	}
	clock := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	// The server's counts: "drained" gets a READ of 10 lines a second, "steady" two reads and an
	// add a second.
	answered := map[string][2]int64{}
	activity := func(list string) (int64, int64) { return answered[list][0], answered[list][1] }
	h := newHub(st, activity, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.now = func() time.Time { return clock }
	var snap *snapshot
	for tick := range 70 {
		if tick > 0 {
			if _, err := st.Read(ctx, "drained", store.First, 10, false, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Read(ctx, "steady", store.First, 1, true, 0); err != nil {
				t.Fatal(err)
			}
			answered["drained"] = [2]int64{answered["drained"][0] + 1, 0}
			answered["steady"] = [2]int64{answered["steady"][0] + 2, answered["steady"][1] + 1}
		}
		snap = h.sample(ctx)
		if tick == 5 && snap.rows[0].HasRateMinute {
			t.Fatal("a rate over a minute after 5 seconds")
		}
		if tick == 0 && (snap.rows[0].Reads != -1 || snap.reads != -1) {
			t.Fatalf("reads a second known at the first tick: %v, %v in all", snap.rows[0].Reads, snap.reads)
		}
		clock = clock.Add(time.Second)
	}
	drained, steady := snap.rows[0], snap.rows[1]
	if drained.Name != "drained" || drained.Length != 2000-690 {
		t.Fatalf("row %+v", drained)
	}
	for _, rate := range []float64{drained.Rate, drained.RateMinute} {
		if math.Abs(rate+10) > 0.01 {
			t.Errorf("drained at %v lines/s, want -10", rate)
		}
	}
	if want := 131 * time.Second; drained.Empty != want {
		t.Errorf("drained empties in %v, want %v", drained.Empty, want)
	}
	if steady.Rate != 0 || steady.RateMinute != 0 || steady.Empty != -1 || !steady.HasRateMinute {
		t.Errorf("steady row %+v", steady)
	}
	if drained.Reads != 1 || drained.Adds != 0 || steady.Reads != 2 || steady.Adds != 1 {
		t.Errorf("reads and adds a second: drained %v and %v, steady %v and %v", drained.Reads, drained.Adds, steady.Reads, steady.Adds)
	}
	if snap.reads != 3 || snap.adds != 1 {
		t.Errorf("the server's reads and adds a second: %v and %v, want 3 and 1", snap.reads, snap.adds)
	}
}

// slowFirstLists is a store whose first Lists takes longer than the hub's next ones, as a cold
// Redis with many lists may on a busy machine.
type slowFirstLists struct {
	store.Store
	calls *atomic.Int32
}

func (s slowFirstLists) Lists(ctx context.Context) ([]store.ListInfo, error) {
	if s.calls.Add(1) == 1 {
		time.Sleep(50 * time.Millisecond)
	}
	return s.Store.Lists(ctx)
}

// A browser that opens the overview while its first sample is slower than the ticks, reads
// nothing more and leaves never wedges the hub: a tick's snapshot sent before the browser's first one
// once filled its channel, the first then waited, and the next tick blocked under the hub's lock
// for good: every page and the server's stop waited behind it.
func TestABrowserLeavingDoesNotWedgeTheHub(t *testing.T) {
	st := memory.New()
	if err := st.Replace(context.Background(), "a", []string{"x"}, ""); err != nil {
		t.Fatal(err)
	}
	for range 20 { // each time, the tick and the first sample race
		h := newHub(slowFirstLists{st, new(atomic.Int32)}, nil, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if ch, ok := h.watch(context.Background()); ok {
				time.Sleep(50 * time.Millisecond)
				h.unwatch(ch)
			}
			h.close()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the hub is wedged: the browser could not leave nor the hub close")
		}
	}
}
