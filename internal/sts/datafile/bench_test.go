package datafile

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkReadLines1M loads a 1 000 000-line, 32 MB file. Besides time per
// load it reports the bytes allocated per byte of file (alloc-B/file-B), the
// heap kept by the lines per byte of file (kept-B/file-B, ideally 1.5: the
// file plus a 16-byte string header per 32-byte line), and the time against
// os.ReadFile of the same file measured in the same run (x-ReadFile).
func BenchmarkReadLines1M(b *testing.B) {
	dir := b.TempDir()
	size := writeLinesFile(b, filepath.Join(dir, "big.csv"), 1_000_000)

	baseline := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		if _, err := os.ReadFile(filepath.Join(dir, "big.csv")); err != nil {
			b.Fatal(err)
		}
		baseline = min(baseline, time.Since(start))
	}

	b.SetBytes(size)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	var lines []string
	for range b.N {
		var err error
		if lines, err = ReadLines(dir, "big.csv", Charset{}, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(size), "alloc-B/file-B")
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(baseline), "x-ReadFile")

	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	b.ReportMetric(float64(kept)/float64(size), "kept-B/file-B")
	if len(lines) != 1_000_000 {
		b.Fatalf("read %d lines", len(lines))
	}
	runtime.KeepAlive(lines)
}

// BenchmarkReadLinesFromDigest1M is a startup load of the same file: ReadLinesFrom also hashes
// it (SHA-256, STATUS's loadedSha256). x-ReadLines is its time against ReadLines of the same file,
// the least of three measured in the same run: what the digest costs.
func BenchmarkReadLinesFromDigest1M(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "big.csv")
	b.SetBytes(writeLinesFile(b, path, 1_000_000))
	baseline := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		if _, err := ReadLines(dir, "big.csv", Charset{}, 0); err != nil {
			b.Fatal(err)
		}
		baseline = min(baseline, time.Since(start))
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := ReadLinesFrom(path, Charset{}, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(baseline), "x-ReadLines")
}

// writeLinesFile writes n lines of 31 characters and a "\n", like a CSV of
// logins ("user1000000;secret1000000;group"), and returns the file size.
func writeLinesFile(b *testing.B, path string, n int) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		id := strconv.Itoa(1_000_000 + i)
		w.WriteString("user" + id + ";secret" + id + ";group\n")
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	info, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	return info.Size()
}
