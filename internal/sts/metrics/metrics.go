package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/version"
)

// Metrics is the registry and the instruments the server updates. Create it with New.
type Metrics struct {
	registry  *prometheus.Registry
	commands  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	fsyncs    prometheus.Histogram
	backend   *prometheus.HistogramVec
	dials     *prometheus.CounterVec
}

// New returns the metrics of a server that keeps its lists in st, with a series of
// sts_list_lines for at most maxLists lists.
func New(st store.Store, maxLists int) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sts_commands_total",
			Help: "Commands answered, by command and result (OK or KO).",
		}, []string{"command", "result"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sts_command_duration_seconds",
			Help:    "Time to answer a command, including the wait of a blocking read and the journal's fsync.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 4, 11), // 100µs to 105s
		}, []string{"command"}),
		fsyncs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sts_journal_fsync_duration_seconds",
			Help:    "Duration of the journal's fsyncs; with the fsync policy always, one covers a group of changes.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14), // 50µs to 410ms
		}),
		backend: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sts_backend_request_duration_seconds",
			Help:    "Requests to the shared storage backend (Redis), by result (OK or error).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16), // 50µs to 1.6s
		}, []string{"result"}),
		dials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sts_backend_dials_total",
			Help: "Connections opened to the shared storage backend (Redis), by result; beyond the first few, reconnections.",
		}, []string{"result"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.commands, m.durations, m.fsyncs, m.backend, m.dials,
		newListCollector(st, maxLists),
		version.Collector(),
	)
	return m
}

// ObserveCommand counts a command answered and how long it took.
func (m *Metrics) ObserveCommand(command string, ok bool, d time.Duration) {
	result := "KO"
	if ok {
		result = "OK"
	}
	m.commands.WithLabelValues(command, result).Inc()
	m.durations.WithLabelValues(command).Observe(d.Seconds())
}

// ObserveBackend records one request to the shared backend.
func (m *Metrics) ObserveBackend(d time.Duration, failed bool) {
	m.backend.WithLabelValues(outcome(failed)).Observe(d.Seconds())
}

// CountBackendDial counts a connection opened to the shared backend.
func (m *Metrics) CountBackendDial(failed bool) { m.dials.WithLabelValues(outcome(failed)).Inc() }

func outcome(failed bool) string {
	if failed {
		return "error"
	}
	return "OK"
}

// ObserveFsync records the duration of one fsync of the journal.
func (m *Metrics) ObserveFsync(d time.Duration) { m.fsyncs.Observe(d.Seconds()) }

// WatchJournal exports the size of the journal on disk, read from size at each scrape.
func (m *Metrics) WatchJournal(size func() int64) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sts_journal_bytes",
		Help: "Bytes of journal segments and snapshot in the state directory.",
	}, func() float64 { return float64(size()) }))
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// listCollector reads the store at each scrape.
type listCollector struct {
	st                                                            store.Store
	maxLists                                                      int
	perList, otherLists, otherLines, lists, lines, bytes, waiting *prometheus.Desc
	up                                                            *prometheus.Desc
	// Lease figures, per list and for the lists beyond the cap.
	leased, returned, deadLettered                *prometheus.Desc
	otherLeased, otherReturned, otherDeadLettered *prometheus.Desc
}

func newListCollector(st store.Store, maxLists int) *listCollector {
	return &listCollector{
		st: st, maxLists: maxLists,
		perList:    prometheus.NewDesc("sts_list_lines", "Lines in the list, for the first lists in name order (see sts_other_lists).", []string{"list"}, nil),
		otherLists: prometheus.NewDesc("sts_other_lists", "Lists beyond the cap on per-list series.", nil, nil),
		otherLines: prometheus.NewDesc("sts_other_lists_lines", "Lines in the lists beyond the cap on per-list series.", nil, nil),
		lists:      prometheus.NewDesc("sts_lists", "Lists, empty ones included.", nil, nil),
		lines:      prometheus.NewDesc("sts_lines", "Lines in all lists.", nil, nil),
		bytes:      prometheus.NewDesc("sts_line_bytes", "Memory the lists hold, the figure --max-total-bytes bounds: the lines' text and bookkeeping, the lists, leases and REQUEST_ID outcomes (memory backend).", nil, nil),
		waiting:    prometheus.NewDesc("sts_waiting_reads", "Reads waiting for a line (WAIT).", nil, nil),
		up:         prometheus.NewDesc("sts_backend_up", "1 when the storage backend answers, 0 when it cannot be reached.", []string{"backend"}, nil),
		leased: prometheus.NewDesc("sts_list_leased_lines",
			"Lines of the list held under leases, not counted in sts_list_lines; for the lists of sts_list_lines that have had a lease.", []string{"list"}, nil),
		returned: prometheus.NewDesc("sts_list_returned_lines_total",
			"Lines of leases that expired or were released, given back to the list.", []string{"list"}, nil),
		deadLettered: prometheus.NewDesc("sts_list_dead_lettered_lines_total",
			"Lines of leases that ended unacknowledged once too often, sent to the list's dead letters (<list>.dead).", []string{"list"}, nil),
		otherLeased:       prometheus.NewDesc("sts_other_lists_leased_lines", "Lines held under leases in the lists beyond the cap on per-list series.", nil, nil),
		otherReturned:     prometheus.NewDesc("sts_other_lists_returned_lines_total", "Lines given back to the lists beyond the cap on per-list series.", nil, nil),
		otherDeadLettered: prometheus.NewDesc("sts_other_lists_dead_lettered_lines_total", "Lines sent to the dead letters of the lists beyond the cap on per-list series.", nil, nil),
	}
}

func (c *listCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.perList, c.otherLists, c.otherLines, c.lists, c.lines, c.bytes, c.waiting, c.up,
		c.leased, c.returned, c.deadLettered, c.otherLeased, c.otherReturned, c.otherDeadLettered} {
		ch <- d
	}
}

// Collect reports the first maxLists lists by name on their own, and the others together. A list
// name that is not valid UTF-8 is shown with U+FFFD; if that makes it equal to a name already
// shown, it counts among the others.
func (c *listCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(c.waiting, float64(c.st.Waiting()))
	name, up := "memory", 1.0
	if h, ok := c.st.(store.Health); ok {
		name = h.Name()
		if !h.Up() {
			up = 0
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, name)
	if sizer, ok := c.st.(store.Sizer); ok {
		gauge(c.bytes, float64(sizer.Bytes()))
	}
	lengths, err := c.st.Lists(ctx)
	if err != nil {
		// The backend is down (sts_backend_up says so): no list figures rather than false zeros.
		return
	}
	shown := make(map[string]bool, min(len(lengths), c.maxLists))
	var total, others, otherLines int
	var otherLeases store.ListInfo
	for _, l := range lengths {
		total += l.Length
		label := strings.ToValidUTF8(l.Name, "\uFFFD")
		if len(shown) < c.maxLists && !shown[label] {
			shown[label] = true
			ch <- prometheus.MustNewConstMetric(c.perList, prometheus.GaugeValue, float64(l.Length), label)
			// A list that never had a lease gets no lease series, so that a scrape keeps its
			// size for plans that take none.
			if l.Leased != 0 || l.Returned != 0 || l.DeadLettered != 0 {
				ch <- prometheus.MustNewConstMetric(c.leased, prometheus.GaugeValue, float64(l.Leased), label)
				ch <- prometheus.MustNewConstMetric(c.returned, prometheus.CounterValue, float64(l.Returned), label)
				ch <- prometheus.MustNewConstMetric(c.deadLettered, prometheus.CounterValue, float64(l.DeadLettered), label)
			}
			continue
		}
		others++
		otherLines += l.Length
		otherLeases.Leased += l.Leased
		otherLeases.Returned += l.Returned
		otherLeases.DeadLettered += l.DeadLettered
	}
	gauge(c.otherLists, float64(others))
	gauge(c.otherLines, float64(otherLines))
	// Lists are never deleted, so a list beyond the cap stays beyond it: these sums only grow, as
	// counters must.
	gauge(c.otherLeased, float64(otherLeases.Leased))
	ch <- prometheus.MustNewConstMetric(c.otherReturned, prometheus.CounterValue, float64(otherLeases.Returned))
	ch <- prometheus.MustNewConstMetric(c.otherDeadLettered, prometheus.CounterValue, float64(otherLeases.DeadLettered))
	gauge(c.lists, float64(len(lengths)))
	gauge(c.lines, float64(total))
}

// collectTimeout bounds the store's answer to a scrape, well within Prometheus' default 10 s.
const collectTimeout = 5 * time.Second
