package sts

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sts-operator/sts-operator/internal/sts/journal"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// scrape reads /metrics and parses it as Prometheus does.
func (ts *testServer) scrape(t testing.TB, header ...string) map[string]*dto.MetricFamily {
	t.Helper()
	a := ts.do(t, http.MethodGet, "/metrics", "", "", header...)
	if a.status != http.StatusOK {
		t.Fatalf("/metrics: %d %q", a.status, a.body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(a.body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, a.body)
	}
	return families
}

// value is the value of the series of family whose labels include the given name=value pairs;
// a counter, a gauge, or a histogram's count. ok is false when there is no such series.
func value(families map[string]*dto.MetricFamily, family string, labels ...string) (float64, bool) {
	f, found := families[family]
	if !found {
		return 0, false
	}
series:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func expectValue(t testing.TB, families map[string]*dto.MetricFamily, want float64, family string, labels ...string) {
	t.Helper()
	if got, ok := value(families, family, labels...); !ok || got != want {
		t.Errorf("%s%v = %v (found %t), want %v", family, labels, got, ok, want)
	}
}

func TestMetrics(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MetricsMaxLists = 2 })
	ts.loadList(t, "a", "1", "2", "3")
	ts.loadList(t, "b", "x")
	ts.loadList(t, "c", "y", "z")
	ts.expect(t, "/sts/ADD?FILENAME=d%FF&LINE=bad%20utf8%20name", okBody(""))
	for range 3 {
		ts.get(t, "/sts/READ?FILENAME=a&KEEP=TRUE")
	}
	ts.expect(t, "/sts/READ?FILENAME=nope", koBody("nope not loaded yet !"))
	ts.expect(t, "/sts/FOO", koBody("unknown command !"))
	ts.expect(t, "/sts/NEW_COMMAND_NAME_42", koBody("unknown command !"))

	m := ts.scrape(t)
	expectValue(t, m, 3, "sts_commands_total", "command", "READ", "result", "OK")
	expectValue(t, m, 1, "sts_commands_total", "command", "READ", "result", "KO")
	expectValue(t, m, 3, "sts_commands_total", "command", "INITFILE", "result", "OK")
	expectValue(t, m, 2, "sts_commands_total", "command", "UNKNOWN", "result", "KO")
	expectValue(t, m, 4, "sts_command_duration_seconds", "command", "READ")
	expectValue(t, m, 3, "sts_list_lines", "list", "a")
	expectValue(t, m, 1, "sts_list_lines", "list", "b")
	if _, found := value(m, "sts_list_lines", "list", "c"); found {
		t.Error("a third list has a series of its own, beyond --metrics-max-lists 2")
	}
	expectValue(t, m, 2, "sts_other_lists")
	expectValue(t, m, 3, "sts_other_lists_lines")
	expectValue(t, m, 4, "sts_lists")
	expectValue(t, m, 7, "sts_lines")
	if backend == "memory" { // Redis' memory is its own (INFO memory)
		// The lines' text and bookkeeping, and the lists'.
		want := len("123xyz") + len("bad utf8 name") + 7*store.LineOverhead + 4*store.ListOverhead + len("abc") + len("d\uFFFD")
		expectValue(t, m, float64(want), "sts_line_bytes")
	}
	expectValue(t, m, 0, "sts_waiting_reads")
	expectValue(t, m, 1, "sts_backend_up", "backend", backend)
	for _, family := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, found := m[family]; !found {
			t.Errorf("%s is missing", family)
		}
	}
	if _, found := m["sts_journal_bytes"]; found {
		t.Error("a server without a journal exports sts_journal_bytes")
	}

	answer := ts.background(t, "/sts/READ?FILENAME=empty&WAIT=10000")
	ts.untilWaiting(t, 1)
	expectValue(t, ts.scrape(t), 1, "sts_waiting_reads")
	ts.expect(t, "/sts/ADD?FILENAME=empty&LINE=e", okBody(""))
	answer()
}

// TestInvalidListNamesDoNotBreakMetrics has list names that differ only in bytes that are not
// UTF-8, which label values cannot carry: the scrape must still succeed. (Requests are decoded
// to valid UTF-8, but startup loading takes file names as the directory has them.)
func TestInvalidListNamesDoNotBreakMetrics(t *testing.T) {
	ts := startServer(t)
	for _, name := range []string{"x\xff", "x\xfe", "x\uFFFD"} {
		if err := ts.store.Add(context.Background(), name, "l", store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	m := ts.scrape(t)
	expectValue(t, m, 1, "sts_list_lines", "list", "x\uFFFD")
	expectValue(t, m, 2, "sts_other_lists")
}

func TestJournalMetrics(t *testing.T) {
	ts := startJournaledServer(t, t.TempDir(), journal.Options{})
	ts.srv.LoadAtStartup(context.Background())
	for i := range 5 {
		ts.expect(t, fmt.Sprintf("/sts/ADD?FILENAME=l&LINE=%d", i), okBody(""))
	}
	m := ts.scrape(t)
	if n, _ := value(m, "sts_journal_fsync_duration_seconds"); n < 5 {
		t.Errorf("%v fsyncs observed for 5 changes acknowledged one after the other", n)
	}
	if size, _ := value(m, "sts_journal_bytes"); size <= 0 {
		t.Errorf("sts_journal_bytes = %v", size)
	}
}

func TestMetricsAuthentication(t *testing.T) {
	open := startServer(t, func(c *Config) { c.AuthToken = "tok" })
	open.scrape(t) // --metrics-auth is off by default

	closed := startServer(t, func(c *Config) { c.AuthToken = "tok"; c.MetricsAuth = true })
	for _, header := range [][]string{nil, {"Authorization", "Bearer nope"}} {
		if a := closed.do(t, http.MethodGet, "/metrics", "", "", header...); a.status != http.StatusUnauthorized || a.body != koBody("Unauthorized") {
			t.Errorf("/metrics with %v: %d %q", header, a.status, a.body)
		}
	}
	closed.scrape(t, "Authorization", "Bearer tok")
	if a := closed.do(t, http.MethodGet, "/metrics?TOKEN=tok", "", ""); a.status != http.StatusOK {
		t.Errorf("/metrics?TOKEN=: %d", a.status)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := closed.do(t, http.MethodGet, path, "", ""); a.status == http.StatusUnauthorized {
			t.Errorf("%s asks for the token", path)
		}
	}
}
