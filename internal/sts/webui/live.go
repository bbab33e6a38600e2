package webui

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The overview's history: a point every sampleEvery ticks, historyPoints of them (15 minutes at
// a tick a second), enough for a sparkline of a soak test's last minutes and for rates over a
// minute, at 1.4 KiB per list (14 MiB at 10 000 lists) while someone watches.
const (
	sampleEvery   = 5
	historyPoints = 180
)

// snapshot is the overview at one tick, computed once and shared by every browser watching.
type snapshot struct {
	at    time.Time
	rows  []row
	err   string
	times []time.Time // the history's points, oldest first
	// reads and adds are this server's, every list's together, a second (-1: not yet).
	reads, adds float64

	// events are this tick's stream events, one per query the streams ask for, each rendered
	// once: a thousand browsers on the default view cost one filter, sort and encoding a tick.
	eventsMu sync.Mutex
	events   map[viewQuery]*renderedEvent
}

// renderedEvent is a stream event rendered once, by the first stream that asks.
type renderedEvent struct {
	once sync.Once
	data []byte
}

// event returns the snapshot's event for q, which render makes the first time any stream asks.
func (s *snapshot) event(q viewQuery, render func() []byte) []byte {
	s.eventsMu.Lock()
	e := s.events[q]
	if e == nil {
		if s.events == nil {
			s.events = map[viewQuery]*renderedEvent{}
		}
		e = &renderedEvent{}
		s.events[q] = e
	}
	s.eventsMu.Unlock()
	e.once.Do(func() { e.data = render() })
	return e.data
}

// answeredAt is a list's count of reads and adds at one tick.
type answeredAt struct {
	at          time.Time
	reads, adds int64
}

// row is one list on the overview.
type row struct {
	Name   string
	Length int
	Leased int
	// Rate and RateMinute are the lines a second the list gained (negative: lost) over the last
	// ten seconds and the last minute (10 and 60 ticks), from its successive lengths; HasRate and
	// HasRateMinute say whether there is history enough.
	Rate, RateMinute float64
	HasRate          bool
	HasRateMinute    bool
	// Empty is the time to empty at the minute's rate (the ten seconds' until a minute has
	// passed), -1 when the list is not draining.
	Empty time.Duration
	// Reads and Adds are the list's reads and adds through this server a second over the last
	// ten ticks, -1 until there are two.
	Reads, Adds float64
	History     []int // lengths at the history's points, -1 before the list existed
}

// hub samples the store once per tick while at least one browser watches, and hands every
// watcher the same snapshot: ten browsers cost one Lists a second, not ten.
type hub struct {
	st       store.Store
	activity func(list string) (reads, adds int64)
	now      func() time.Time // the samples' clock
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	watchers map[chan *snapshot]struct{}
	stop     chan struct{} // closes the sampling goroutine; nil while it is not running
	closed   bool
	last     *snapshot
	sampling *sampling        // the sample under way, nil when none is
	history  map[string][]int // ring of historyPoints per list, indexed like times
	times    []time.Time      // ring of the points' times
	next     int              // where the next point goes in the rings
	ticks    int
	counts   map[string][]answeredAt // each list's counts at the last ten ticks, oldest first
}

func newHub(st store.Store, activity func(string) (int64, int64), interval time.Duration, log *slog.Logger) *hub {
	return &hub{st: st, activity: activity, interval: interval, log: log, now: time.Now, watchers: map[chan *snapshot]struct{}{},
		counts:  map[string][]answeredAt{},
		history: map[string][]int{}, times: make([]time.Time, historyPoints)}
}

// watch subscribes a browser: the channel gets the latest snapshot at once (a fresh one if none)
// and each one after; a slow browser misses snapshots rather than holding the others up. ok is
// false once the hub is closed.
func (h *hub) watch(ctx context.Context) (ch chan *snapshot, ok bool) {
	ch = make(chan *snapshot, 1)
	h.mu.Lock()
	last := h.last
	h.mu.Unlock()
	if last == nil {
		last = h.sample(ctx)
	}
	// The first snapshot goes in before the channel is shared: run, which sends under h.mu,
	// then never finds it full, and close never closes it under this send.
	ch <- last
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	h.watchers[ch] = struct{}{}
	if h.stop == nil {
		h.stop = make(chan struct{})
		go h.run(h.stop)
	}
	return ch, true
}

func (h *hub) unwatch(ch chan *snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watchers, ch)
	if len(h.watchers) == 0 && h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

// close ends every watch; later watches fail.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.watchers {
		close(ch)
		delete(h.watchers, ch)
	}
	if h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

func (h *hub) run(stop chan struct{}) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		snap := h.sample(context.Background())
		h.mu.Lock()
		for ch := range h.watchers {
			select {
			case <-ch: // the browser has not taken the previous one: it gets this one instead
			default:
			}
			select {
			case ch <- snap:
			default: // never blocks under h.mu, whatever the browser does
			}
		}
		h.mu.Unlock()
	}
}

// current returns a snapshot for a page rendered without a watch: the latest, or a fresh one.
func (h *hub) current(ctx context.Context) *snapshot {
	h.mu.Lock()
	last := h.last
	h.mu.Unlock()
	if last != nil && time.Since(last.at) < 2*h.interval {
		return last
	}
	return h.sample(ctx)
}

// sampling is a sample under way, which whoever asks for one meanwhile waits for.
type sampling struct {
	done chan struct{}
	snap *snapshot
}

// sample returns a fresh snapshot: the one under way if a sample is, else one it takes. However
// many browsers open the page at once, and whatever the tick does, the store is asked once at a
// time (each of the 1 000 streams opening together took a sample of its own).
func (h *hub) sample(ctx context.Context) *snapshot {
	h.mu.Lock()
	if s := h.sampling; s != nil {
		h.mu.Unlock()
		<-s.done // within the sample's own timeout
		return s.snap
	}
	s := &sampling{done: make(chan struct{})}
	h.sampling = s
	h.mu.Unlock()
	// The sample serves every waiter: the browser that began it leaving does not end it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*h.interval)
	s.snap = h.take(ctx)
	cancel()
	h.mu.Lock()
	h.sampling = nil
	h.mu.Unlock()
	close(s.done)
	return s.snap
}

// take reads every list's length once and computes the rows.
func (h *hub) take(ctx context.Context) *snapshot {
	lists, err := h.st.Lists(ctx)
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.log.Warn("The web page could not read the lists", "error", err)
		snap := &snapshot{at: now, err: "The lists could not be read: " + err.Error(), reads: -1, adds: -1}
		if h.last != nil {
			snap.rows, snap.times = h.last.rows, h.last.times
		}
		return snap
	}
	h.ticks++
	record := h.ticks%sampleEvery == 1 || h.last == nil
	if record {
		h.times[h.next] = now
	}
	rings := make([][]int, len(lists))
	for i, l := range lists {
		ring, seen := h.history[l.Name]
		if !seen {
			ring = make([]int, historyPoints)
			for j := range ring {
				ring[j] = -1
			}
			h.history[l.Name] = ring
		}
		if record {
			ring[h.next] = l.Length
		}
		rings[i] = ring
	}
	if record {
		h.next = (h.next + 1) % historyPoints
	}
	if len(h.history) > len(lists) {
		h.forget(lists)
	}
	snap := &snapshot{at: now, rows: make([]row, len(lists)), reads: -1, adds: -1}
	for i, l := range lists {
		r := h.row(l, rings[i], now)
		r.Reads, r.Adds = h.throughput(l.Name, now)
		if r.Reads >= 0 {
			snap.reads, snap.adds = max(snap.reads, 0)+r.Reads, max(snap.adds, 0)+r.Adds
		}
		snap.rows[i] = r
	}
	snap.times = h.ordered(h.times)
	h.last = snap
	return snap
}

// ordered returns a ring's points oldest first.
func (h *hub) ordered(ring []time.Time) []time.Time {
	return append(append([]time.Time(nil), ring[h.next:]...), ring[:h.next]...)
}

// row computes a list's rates and time to empty from its history: the rate over a window is the
// change from the newest point at least that old to now.
func (h *hub) row(l store.ListInfo, ring []int, now time.Time) row {
	r := row{Name: l.Name, Length: l.Length, Leased: l.Leased, Empty: -1, History: make([]int, historyPoints)}
	copy(r.History, ring[h.next:])
	copy(r.History[historyPoints-h.next:], ring[:h.next])
	rate := func(window time.Duration) (float64, bool) {
		for k := 1; k <= historyPoints; k++ {
			j := (h.next - k + historyPoints) % historyPoints
			t := h.times[j]
			if t.IsZero() || ring[j] < 0 {
				return 0, false
			}
			if age := now.Sub(t); age >= window {
				return float64(l.Length-ring[j]) / age.Seconds(), true
			}
		}
		return 0, false
	}
	// The windows are counted in ticks: ten seconds and a minute at the default tick.
	r.Rate, r.HasRate = rate(10 * h.interval)
	r.RateMinute, r.HasRateMinute = rate(60 * h.interval)
	drain, ok := r.RateMinute, r.HasRateMinute
	if !ok {
		drain, ok = r.Rate, r.HasRate
	}
	if ok && drain < 0 && l.Length > 0 {
		r.Empty = time.Duration(float64(l.Length) / -drain * float64(time.Second))
	}
	return r
}

// throughput records this tick's counts of a list's reads and adds and returns them a second
// since the oldest of its last ten ticks, -1 before there are two.
func (h *hub) throughput(list string, now time.Time) (reads, adds float64) {
	if h.activity == nil {
		return -1, -1
	}
	r, a := h.activity(list)
	counts := append(h.counts[list], answeredAt{now, r, a})
	if len(counts) > 10 {
		counts = counts[len(counts)-10:]
	}
	h.counts[list] = counts
	first := counts[0]
	elapsed := now.Sub(first.at).Seconds()
	if len(counts) < 2 || elapsed <= 0 {
		return -1, -1
	}
	return float64(r-first.reads) / elapsed, float64(a-first.adds) / elapsed
}

// forget drops the history and counts of the lists that are gone (deleted, or named once by a
// test run), so that a long-watched server with changing names does not keep them all.
func (h *hub) forget(lists []store.ListInfo) {
	present := make(map[string]bool, len(lists))
	for _, l := range lists {
		present[l.Name] = true
	}
	for name := range h.history {
		if !present[name] {
			delete(h.history, name)
			delete(h.counts, name)
		}
	}
}
