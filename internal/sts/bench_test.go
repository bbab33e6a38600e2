package sts

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/journal"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// benchConns is the number of concurrent keep-alive connections, as a JMeter plan with 64
// threads would open.
const benchConns = 64

// requestsPerSecond sends n GETs of url over benchConns keep-alive connections and returns the
// throughput. Every answer must be 200 with a body of wantLen bytes.
func requestsPerSecond(b *testing.B, client *http.Client, url string, n, wantLen int) float64 {
	b.Helper()
	return testutil.PerSecond(b, benchConns, n, func() error {
		_, err := getChecked(client, url, wantLen)
		return err
	})
}

// getChecked GETs url and returns the answer's header, or an error unless the answer is 200
// with a body of wantLen bytes.
func getChecked(client *http.Client, url string, wantLen int) (http.Header, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(body) != wantLen {
		return nil, fmt.Errorf("%s: answer %d %q (%v), want %d bytes", url, resp.StatusCode, body, err, wantLen)
	}
	return resp.Header, nil
}

// startBare serves a fixed body from a bare net/http handler: the baseline.
func startBare(b *testing.B, body []byte) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// writeLines writes n lines of the given width (without the "\n") to a new file in dir.
func writeLines(b *testing.B, dir, name string, n, width int) int64 {
	b.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	format := "%0" + strconv.Itoa(width) + "d\n"
	for i := range n {
		fmt.Fprintf(w, format, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	info, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return info.Size()
}

// BenchmarkReadFirstKeepVsBareHTTP compares READ FIRST KEEP=TRUE over 64 keep-alive connections
// with a bare net/http handler answering a body of the same size, in the same run. The metric
// "ratio" is the table server's throughput over the baseline's (target ≥ 0.7).
func BenchmarkReadFirstKeepVsBareHTTP(b *testing.B) {
	ts := startServer(b)
	writeLines(b, ts.dir, "l.txt", 10_000, 20)
	ts.expect(b, "/sts/INITFILE?FILENAME=l.txt", okBody("10000"))
	bodyLen := len(okBody(strings.Repeat("0", 20)))
	bare := startBare(b, []byte(strings.Repeat("b", bodyLen)))
	client := keepAliveClient(benchConns)
	n := max(b.N, 2000)
	b.ResetTimer()
	var stsRate, bareRate float64
	for range 2 { // alternate to spread any drift of the shared machine over both
		bareRate += requestsPerSecond(b, client, bare+"/", n, bodyLen)
		stsRate += requestsPerSecond(b, client, ts.base+"/sts/READ?FILENAME=l.txt&READ_MODE=FIRST&KEEP=TRUE", n, bodyLen)
	}
	b.ReportMetric(stsRate/2, "sts-req/s")
	b.ReportMetric(bareRate/2, "bare-req/s")
	b.ReportMetric(stsRate/bareRate, "ratio")
}

// BenchmarkReadRandomVsFirst compares READ RANDOM with READ FIRST (both KEEP=TRUE, so the list
// keeps its size) on a 1 000 000-line list over 64 keep-alive connections. The metric "ratio"
// is RANDOM's throughput over FIRST's (target ≥ 0.5).
func BenchmarkReadRandomVsFirst(b *testing.B) {
	ts := startServer(b)
	writeLines(b, ts.dir, "m.txt", 1_000_000, 20)
	ts.expect(b, "/sts/INITFILE?FILENAME=m.txt", okBody("1000000"))
	bodyLen := len(okBody(strings.Repeat("0", 20)))
	client := keepAliveClient(benchConns)
	n := max(b.N, 2000)
	b.ResetTimer()
	var first, random float64
	for range 2 {
		first += requestsPerSecond(b, client, ts.base+"/sts/READ?FILENAME=m.txt&READ_MODE=FIRST", n, bodyLen)
		random += requestsPerSecond(b, client, ts.base+"/sts/READ?FILENAME=m.txt&READ_MODE=RANDOM", n, bodyLen)
	}
	b.ReportMetric(first/2, "first-req/s")
	b.ReportMetric(random/2, "random-req/s")
	b.ReportMetric(random/first, "ratio")
}

// procStatusKB reads a field of /proc/self/status in KiB, or -1 where there is none.
func procStatusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb
			}
		}
	}
	return -1
}

// BenchmarkInitFile loads a 1 000 000-line, 32 MB file with INITFILE over HTTP. Metrics: the
// time per load (ns/op, target < 0.5 s); "heap-x-file", the live heap the loaded list holds over
// the file size; "peak-rss-x-file", the growth of the process's peak resident memory during the
// first load over the file size (target < 2.5; Linux only).
func BenchmarkInitFile(b *testing.B) {
	ts := startServer(b)
	size := writeLines(b, ts.dir, "big.txt", 1_000_000, 31)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Writing 5 to clear_refs resets the peak resident size to the current one.
	peakReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	rssBefore := procStatusKB("VmRSS")
	ts.expect(b, "/sts/INITFILE?FILENAME=big.txt", okBody("1000000"))
	peak := procStatusKB("VmHWM")
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	for b.Loop() {
		ts.expect(b, "/sts/INITFILE?FILENAME=big.txt", okBody("1000000"))
	}
	// Reported after the loop, whose timer reset deletes the metrics reported before it.
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(size), "heap-x-file")
	if peakReset && rssBefore > 0 && peak > 0 {
		b.ReportMetric(float64((peak-rssBefore)<<10)/float64(size), "peak-rss-x-file")
	}
}

// BenchmarkReadDrainJournalVsMemory compares READ KEEP=FALSE over 64 keep-alive connections on a
// server that records every change in a journal (fsync policy always, group commit) with the same
// server without a journal, in the same run. The metric "ratio" is the journaled throughput over
// the other (target ≥ 0.5); "reads/fsync", how many reads one fsync acknowledged on average.
func BenchmarkReadDrainJournalVsMemory(b *testing.B) {
	n := max(b.N, 5000)
	const rounds = 3
	journaled := startJournaledServer(b, b.TempDir(), journal.Options{Policy: journal.Always})
	journaled.srv.LoadAtStartup(context.Background())
	memory := startServer(b)
	bodyLen := len(okBody(strings.Repeat("0", 20)))
	for _, ts := range []*testServer{journaled, memory} {
		writeLines(b, ts.dir, "l.txt", rounds*n, 20)
		ts.expect(b, "/sts/INITFILE?FILENAME=l.txt", okBody(strconv.Itoa(rounds*n)))
	}
	client := keepAliveClient(benchConns)
	b.ResetTimer()
	var withJournal, without float64
	for range rounds { // alternate to spread any drift of the shared machine over both
		without += requestsPerSecond(b, client, memory.base+"/sts/READ?FILENAME=l.txt&KEEP=FALSE", n, bodyLen)
		withJournal += requestsPerSecond(b, client, journaled.base+"/sts/READ?FILENAME=l.txt&KEEP=FALSE", n, bodyLen)
	}
	b.StopTimer()
	m := journaled.scrape(b)
	fsyncs, _ := value(m, "sts_journal_fsync_duration_seconds")
	b.ReportMetric(withJournal/rounds, "journal-req/s")
	b.ReportMetric(without/rounds, "memory-req/s")
	b.ReportMetric(withJournal/without, "ratio")
	b.ReportMetric(float64(rounds*n)/fsyncs, "reads/fsync")
}

// BenchmarkLeasedReadAckVsConsumingRead compares consuming a line with a lease, READ LEASE then
// ACK by its id, with READ KEEP=FALSE, over 64 keep-alive connections in the same run. The metric
// "ratio" is the leased consumption's lines per second over the plain one's (target ≥ 0.45: the
// lease costs a second request per line).
func BenchmarkLeasedReadAckVsConsumingRead(b *testing.B) {
	n := max(b.N, 2500)
	const rounds = 8 // short rounds, alternated, so that the shared machine's drift hits both alike
	ts := startServer(b)
	for _, name := range []string{"plain.txt", "leased.txt"} {
		writeLines(b, ts.dir, name, rounds*n, 20)
		ts.expect(b, "/sts/INITFILE?FILENAME="+name, okBody(strconv.Itoa(rounds*n)))
	}
	bodyLen, ackLen := len(okBody(strings.Repeat("0", 20))), len(okBody(""))
	read, leasedRead := ts.base+"/sts/READ?FILENAME=plain.txt&KEEP=FALSE", ts.base+"/sts/READ?FILENAME=leased.txt&KEEP=FALSE&LEASE=60000"
	client := keepAliveClient(benchConns)
	b.ResetTimer()
	var plain, leased float64
	for range rounds {
		plain += requestsPerSecond(b, client, read, n, bodyLen)
		leased += testutil.PerSecond(b, benchConns, n, func() error {
			h, err := getChecked(client, leasedRead, bodyLen)
			if err == nil {
				_, err = getChecked(client, ts.base+"/sts/ACK?LEASE="+h.Get(leaseHeader), ackLen)
			}
			return err
		})
	}
	b.StopTimer()
	if l := ts.listStatus(b, "leased.txt"); l.Length != 0 || l.Leased != 0 {
		b.Fatalf("leased.txt after the run: %+v, want every line acknowledged", l)
	}
	b.ReportMetric(leased/rounds, "leased-lines/s")
	b.ReportMetric(plain/rounds, "plain-lines/s")
	b.ReportMetric(leased/plain, "ratio")
}
