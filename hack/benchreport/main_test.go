package main

import (
	"strings"
	"testing"
	"time"
)

// What go test -bench -count 2 prints for two packages: a benchmark's own output between its
// name and its result (on lines of its own, or on the name's line), b.Log lines, a
// sub-benchmark, a line of numbers the benchmark printed.
const sample = `goos: linux
goarch: amd64
pkg: github.com/sts-operator/sts-operator/internal/sts
cpu: Intel(R) Xeon(R) CPU @ 2.20GHz
BenchmarkReadFirstKeepVsBareHTTP-2   	       1	2004561234 ns/op	     21000 sts-req/s	     40000 bare-req/s	         0.5250 ratio
BenchmarkReadFirstKeepVsBareHTTP-2   	       1	2004561000 ns/op	     23000 sts-req/s	     40000 bare-req/s	         0.5750 ratio
BenchmarkRedisServers/servers=2-2    	       1	10 ns/op	     2.0 two-x-1-server
BenchmarkLoud-2
printed by the benchmark itself
    12 34 56
       1	3000 ns/op	     7.5 ratio
    bench_test.go:12: a log line
BenchmarkLoud-2   	       1	1000 ns/op	     2.5 ratio
PASS
ok  	github.com/sts-operator/sts-operator/internal/sts	12.3s
pkg: github.com/sts-operator/sts-operator/internal/controller
BenchmarkScale-2   	       1	9000000000 ns/op	        12.5 s-to-ready	        30.0 x-baseline	         0 steady-writes
BenchmarkScale-2   	{"level":"error","msg":"Reconciler error"}
{"level":"error","msg":"Reconciler error 2"}
       1	9500000000 ns/op	        13.5 s-to-ready	        31.0 x-baseline	         0 steady-writes
PASS
pkg: github.com/sts-operator/sts-operator/internal/sts
BenchmarkRunAlone-2   	       1	10 ns/op
PASS
`

func TestParseAndWrite(t *testing.T) {
	r := &Run{}
	if err := r.Parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range r.Benchmarks {
		names = append(names, b.Name)
	}
	if got, want := strings.Join(names, " "), "BenchmarkReadFirstKeepVsBareHTTP BenchmarkRedisServers/servers=2 BenchmarkLoud BenchmarkScale BenchmarkRunAlone"; got != want {
		t.Fatalf("benchmarks %q, want %q", got, want)
	}
	first := r.Benchmarks[0]
	if got := first.Values["ratio"]; len(got) != 2 || got[0] != 0.525 || got[1] != 0.575 {
		t.Errorf("ratios %v", got)
	}
	if got := r.Benchmarks[2].Values["ratio"]; len(got) != 2 || got[0] != 7.5 || got[1] != 2.5 {
		t.Errorf("the benchmark whose output split its result: %v", got)
	}
	if r.CPU != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("cpu %q", r.CPU)
	}
	var out strings.Builder
	m := Machine{CPU: r.CPU, Cores: 2, Kernel: "linux 6.1", Go: "go1.26", Commit: "abc", Date: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC),
		Started: time.Date(2026, 12, 4, 9, 20, 0, 0, time.UTC), LoadStart: loadTriple("1.00 2.00 3.00 1/200 42\n")}
	Write(&out, r, m, 2, map[string]string{
		"github.com/sts-operator/sts-operator/internal/sts BenchmarkReadFirstKeepVsBareHTTP": "BenchmarkReadFirstKeepVsBareHTTP measures READ against a bare handler.\n",
	})
	if got := strings.Count(out.String(), "## internal/sts\n"); got != 1 {
		t.Errorf("internal/sts has %d sections, want one for both of its runs", got)
	}
	if i, j := strings.Index(out.String(), "### BenchmarkRunAlone"), strings.Index(out.String(), "## internal/controller"); i > j {
		t.Errorf("a package's benchmark of a later run is not with the others")
	}
	for _, want := range []string{
		"| date | 2026-12-04 09:20 to 10:00 UTC (40 min) |",
		"| load average when the run began (1 / 5 / 15 min) | 1.00 / 2.00 / 3.00 |",
		"| CPU | Intel(R) Xeon(R) CPU @ 2.20GHz |",
		"## internal/sts\n",
		"> BenchmarkReadFirstKeepVsBareHTTP measures READ against a bare handler.\n",
		"| ratio | 0.525 | 0.55 | 0.575 | 2 |",
		"| sts-req/s | 21000 | 22000 | 23000 | 2 |",
		"| bare-req/s | 40000 | 40000 | 40000 | 2 |",
		"## internal/controller\n",
		"| steady-writes | 0 | 0 | 0 | 2 |",
		"| s-to-ready | 12.5 | 13.0 | 13.5 | 2 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSummary(t *testing.T) {
	for _, c := range []struct {
		in            []float64
		lo, med, high float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 1, 3, 5},
		{[]float64{4, 1, 3, 2}, 1, 2.5, 4},
	} {
		if lo, med, hi := Summary(c.in); lo != c.lo || med != c.med || hi != c.high {
			t.Errorf("Summary(%v) = %v %v %v", c.in, lo, med, hi)
		}
	}
}
