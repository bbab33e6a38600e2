package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// batchRead is one read of a batch test and what it must get.
type batchRead struct {
	n      int
	id     string   // REQUEST_ID, "" for none
	other  bool     // its id was sent before for another request
	cancel bool     // its client goes away while it is queued
	gone   bool     // its client goes away once queued, unseen until the batch is sent (goneUnseen)
	want   []string // nil: any n lines
	err    error    // want an error that Is this one instead
	short  bool     // want a store.ShortListError instead
}

// readsInOneBatch holds the first read's script in a paused Redis, queues reads behind it in
// order, and lets Redis go: they go in one batch, which must give each read what the reads one
// after the other would have (the first read being the first of them), and cost two scripts.
func readsInOneBatch(t *testing.T, srv *redistest.Server, s *Store, list string, pos store.Position, keep bool, reads []batchRead) [][]string {
	t.Helper()
	e := batchKey{name: list, pos: pos, keep: keep}
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	srv.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			srv.Thaw(t)
		}
	}()
	got := make([][]string, len(reads))
	errs := make([]error, len(reads))
	queued := func() int {
		s.batches.mu.Lock()
		defer s.batches.mu.Unlock()
		q, onItsWay := s.batches.queued[e]
		if !onItsWay {
			return -1
		}
		return len(q)
	}
	var wg sync.WaitGroup
	behind := 0
	for i, r := range reads {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if r.id != "" {
			fingerprint := "READ " + list
			if r.other {
				fingerprint = "ADD " + list
			}
			ctx = store.WithRequest(ctx, store.Request{ID: r.id, Fingerprint: []byte(fingerprint), Window: time.Minute})
		}
		unseen := &goneUnseen{Context: ctx}
		wg.Go(func() { got[i], errs[i] = s.Read(unseen, list, pos, r.n, keep, 0) })
		// Each read in its place: the first on its way, the others queued in order.
		if i > 0 {
			behind++
		}
		testutil.Until(t, 5*time.Second, time.Millisecond, "the read to queue", func() bool { return queued() == behind })
		unseen.gone.Store(r.gone)
		if r.cancel {
			cancel()
			behind--
			testutil.Until(t, 5*time.Second, time.Millisecond, "the cancelled read to leave", func() bool { return queued() == behind })
		}
	}
	srv.Thaw(t)
	thawed = true
	wg.Wait()
	for i, r := range reads {
		var short *store.ShortListError
		switch {
		case r.short && !errors.As(errs[i], &short):
			t.Errorf("read %d (%+v): %q, %v; want too few lines", i, r, got[i], errs[i])
		case r.short:
		case r.err != nil && !errors.Is(errs[i], r.err):
			t.Errorf("read %d (%+v): %q, %v; want %v", i, r, got[i], errs[i], r.err)
		case r.err == nil && r.want == nil && (errs[i] != nil || len(got[i]) != r.n):
			t.Errorf("read %d (%+v): %q, %v; want %d lines", i, r, got[i], errs[i], r.n)
		case r.err == nil && r.want != nil && (errs[i] != nil || !slices.Equal(got[i], r.want)):
			t.Errorf("read %d (%+v): %q, %v; want %q", i, r, got[i], errs[i], r.want)
		}
	}
	if scripts := evalshaCalls(t, srv); scripts != 2 {
		t.Errorf("%d reads cost %d scripts, want 2 (the first, then the rest in one)", len(reads), scripts)
	}
	return got
}

// goneUnseen is a client's context that, once gone is set, reports Canceled but never closes its
// Done: a client that went between the moment its read was taken into a batch and the moment the
// batch is sent, the window held open.
type goneUnseen struct {
	context.Context
	gone atomic.Bool
}

func (c *goneUnseen) Err() error {
	if c.gone.Load() {
		return context.Canceled
	}
	return c.Context.Err()
}

// evalshaCalls is how many scripts Redis ran since its statistics were reset.
func evalshaCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	reply, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(fmt.Sprint(reply), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			var n int
			_, _ = fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return 0
}

func TestReadsQueuedBehindOneGoInOneBatch(t *testing.T) {
	srv := redistest.Start(t)
	lines := func(s *Store, name string, n int) []string {
		t.Helper()
		all := make([]string, n)
		for i := range all {
			all[i] = fmt.Sprintf("l%04d", i)
		}
		if err := s.Replace(context.Background(), name, all, ""); err != nil {
			t.Fatal(err)
		}
		return all
	}
	t.Run("FIRST, the lines of all taken at once and shared in order", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 1200) // over two chunks: the batch crosses from the head into the next
		readsInOneBatch(t, srv, s, "q", store.First, false, []batchRead{
			{n: 1, want: l[0:1]},
			{n: 1, id: "x", want: l[1:2]},
			{n: 300, want: l[2:302]},
			{n: 1, cancel: true, err: context.Canceled},
			{n: 200, id: "y", want: l[302:502]},
			{n: 10, want: l[502:512]}, // 511 lines: one more would be over batchLines
		})
		// A retry of a request in the batch gets its answer, and takes nothing.
		ctx := store.WithRequest(context.Background(), store.Request{ID: "y", Fingerprint: []byte("READ q"), Window: time.Minute})
		if got, err := s.Read(ctx, "q", store.First, 200, false, 0); err != nil || !slices.Equal(got, l[302:502]) {
			t.Errorf("the retry of y: %d lines, %v", len(got), err)
		}
		if n, err := s.Length(context.Background(), "q"); err != nil || n != 1200-512 {
			t.Errorf("length %d, %v; want %d", n, err, 1200-512)
		}
	})
	t.Run("reads whose clients went once taken into the batch: not sent, no line taken for them", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 10)
		readsInOneBatch(t, srv, s, "q", store.First, false, []batchRead{
			{n: 1, want: l[0:1]},
			{n: 1, gone: true, err: context.Canceled}, // the batch's leader
			{n: 2, want: l[1:3]},
			{n: 1, gone: true, err: context.Canceled},
			{n: 1, want: l[3:4]},
		})
		if n, err := s.Length(context.Background(), "q"); err != nil || n != 6 {
			t.Errorf("length %d, %v; want 6", n, err)
		}
	})
	t.Run("a batch longer than the list: each read in turn", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 6)
		readsInOneBatch(t, srv, s, "q", store.Last, false, []batchRead{
			{n: 1, want: l[5:6]},
			{n: 2, want: []string{l[4], l[3]}},
			{n: 4, short: true},
			{n: 2, id: "z", want: []string{l[2], l[1]}},
			{n: 1, want: l[0:1]},
			{n: 1, err: store.ErrEmpty},
		})
	})
	t.Run("two reads of one request: the second recalls the first's answer; an id reused is refused", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 10)
		readsInOneBatch(t, srv, s, "q", store.First, false, []batchRead{
			{n: 1, want: l[0:1]},
			{n: 1, id: "same", want: l[1:2]},
			{n: 1, want: l[2:3]},
			{n: 1, id: "same", want: l[1:2]},
			{n: 1, id: "same", other: true, err: store.ErrRequestReused},
			{n: 1, want: l[3:4]},
		})
		if n, _ := s.Length(context.Background(), "q"); n != 6 {
			t.Errorf("length %d, want 6: a request's two reads took two lines", n)
		}
	})
	t.Run("RANDOM: each read its own lines", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 300)
		got := readsInOneBatch(t, srv, s, "q", store.Random, false, []batchRead{
			{n: 1}, {n: 3}, {n: 1, id: "r"}, {n: 400, short: true}, {n: 1, id: "r"}, {n: 50},
		})
		if !slices.Equal(got[4], got[2]) {
			t.Errorf("the second read of r got %q, the first %q", got[4], got[2])
		}
		taken := map[string]bool{}
		for _, lines := range append(got[:4:4], got[5]) {
			for _, line := range lines {
				if taken[line] || !slices.Contains(l, line) {
					t.Errorf("%q handed out twice, or never loaded", line)
				}
				taken[line] = true
			}
		}
		left, err := s.Read(context.Background(), "q", store.First, 300-len(taken), true, 0)
		if err != nil || len(taken) != 1+3+1+50 {
			t.Errorf("%d lines taken, %v", len(taken), err)
		}
		for _, line := range left {
			if taken[line] {
				t.Errorf("%q handed out and still in the list", line)
			}
		}
	})
	t.Run("LAST with KEEP gives each read the last line", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 5)
		readsInOneBatch(t, srv, s, "q", store.Last, true, []batchRead{
			{n: 1, want: l[4:5]},
			{n: 1, want: l[4:5]},
			{n: 1, want: l[4:5]},
		})
	})
	t.Run("FIRST with KEEP turns the list", func(t *testing.T) {
		s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
		l := lines(s, "q", 3)
		readsInOneBatch(t, srv, s, "q", store.First, true, []batchRead{
			{n: 1, want: l[0:1]},
			{n: 1, want: l[1:2]},
			{n: 1, want: l[2:3]},
			{n: 1, want: l[0:1]},
		})
	})
}

// TestLongReadUnderRequest: a READ of more lines than Lua's unpack takes at once (some 8000),
// under a REQUEST_ID, gets them, and its retry the same ones: its outcome was recorded, and no
// line was taken for an error.
func TestLongReadUnderRequest(t *testing.T) {
	s := open(t, Connection{URL: redistest.Start(t).URL()}, newPrefix(), store.Limits{})
	all := testutil.Numbered("l", 20_000)
	if err := s.Replace(context.Background(), "q", all, ""); err != nil {
		t.Fatal(err)
	}
	ctx := store.WithRequest(context.Background(), store.Request{ID: "long", Fingerprint: []byte("READ q"), Window: time.Minute})
	for try := range 2 {
		if got, err := s.Read(ctx, "q", store.First, 9000, false, 0); err != nil || !slices.Equal(got, all[:9000]) {
			t.Fatalf("try %d: %d lines, %v; want the first 9000", try, len(got), err)
		}
	}
	if n, err := s.Length(context.Background(), "q"); err != nil || n != 11_000 {
		t.Errorf("length %d, %v; want 11000", n, err)
	}
}
