package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
)

const restoreLines = 1_000_000

// BenchmarkRestore measures Open on a state of 1 000 000 lines of 31 bytes (32 MB of text, as
// issue 2's INITFILE benchmark), kept two ways: as a snapshot, and as a journal of one ADD per
// line. Metrics: the seconds per restore of each ("snapshot-s", "journal-s") and the lines
// restored per second. ns/op covers both.
func BenchmarkRestore(b *testing.B) {
	fromSnapshot, fromJournal := b.TempDir(), b.TempDir()
	lines := make([]string, restoreLines)
	for i := range lines {
		lines[i] = fmt.Sprintf("%031d", i)
	}
	m := memory.New()
	j, err := Open(ctx, fromSnapshot, m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Replace(context.Background(), "l", lines, ""); err != nil {
		b.Fatal(err)
	}
	if err := j.Snapshot(); err != nil {
		b.Fatal(err)
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	writeAddJournal(b, fromJournal, lines)

	restore := func(dir string) time.Duration {
		start := time.Now()
		m := memory.New()
		j, err := Open(ctx, dir, m, Options{})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if n, err := m.Length(context.Background(), "l"); err != nil || n != restoreLines {
			b.Fatalf("restored %d lines, %v", n, err)
		}
		if err := j.Close(); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var snapshot, journal time.Duration
	runs := 0
	for b.Loop() {
		snapshot += restore(fromSnapshot)
		journal += restore(fromJournal)
		runs++
	}
	b.ReportMetric(snapshot.Seconds()/float64(runs), "snapshot-s")
	b.ReportMetric(journal.Seconds()/float64(runs), "journal-s")
	b.ReportMetric(restoreLines/(snapshot.Seconds()/float64(runs)), "snapshot-lines/s")
	b.ReportMetric(restoreLines/(journal.Seconds()/float64(runs)), "journal-lines/s")
}

// writeAddJournal writes, in dir, the journal segment that one ADD of each line would have left,
// in one go rather than one fsync per record.
func writeAddJournal(b *testing.B, dir string, lines []string) {
	b.Helper()
	rec := &batchRecorder{}
	m := memory.New()
	m.StartRecording(rec)
	for _, line := range lines {
		if err := m.Add(context.Background(), "l", line, store.Last, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(1)), append([]byte(segmentMagic), rec.buf...), 0o640); err != nil {
		b.Fatal(err)
	}
}

// batchRecorder frames records as a journal does, in memory.
type batchRecorder struct {
	buf []byte
	seq uint64
}

func (r *batchRecorder) MaxChange() int64 { return (&Journal{}).MaxChange() }

func (r *batchRecorder) Record(change []byte) (uint64, memory.Commit) {
	r.seq++
	var err error
	if r.buf, err = appendRecord(r.buf, r.seq, change); err != nil {
		return r.seq, refused{err}
	}
	return r.seq, refused{nil}
}
