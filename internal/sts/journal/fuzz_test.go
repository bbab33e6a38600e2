package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
)

// FuzzRestore opens a state directory made of any bytes: a snapshot (when snap is not empty)
// and two journal segments after it. With framed, each segment's bytes are cut at 0xFF into
// change records framed as the writer frames them (valid checksums, increasing numbers), so
// that hostile records reach the replay itself; otherwise the bytes are the files as they are.
// Open must refuse or restore, never panic or hang; what it restores must open again to the
// same lists (a torn tail, once cut, stays cut).
func FuzzRestore(f *testing.F) {
	// Seeds: a real directory's files, whole and damaged, and hand-made records.
	dir := f.TempDir()
	m := memory.New()
	j, err := Open(ctx, dir, m, Options{})
	if err != nil {
		f.Fatal(err)
	}
	churn(f, m, 1, 60)
	if err := j.Snapshot(); err != nil {
		f.Fatal(err)
	}
	churn(f, m, 2, 60)
	if err := j.Close(); err != nil {
		f.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	snap, seg := read(snapshotName(2)), read(segmentName(2))
	f.Add(snap, seg, []byte(nil), false)
	f.Add(snap, seg[:len(seg)-3], []byte(nil), false)
	f.Add([]byte(nil), seg, seg, false)
	flipped := bytes.Clone(seg)
	flipped[len(flipped)/2] ^= 0x10
	f.Add(snap, flipped, []byte(segmentMagic), false)
	f.Add([]byte(nil), []byte("\x01lb\x01x\xff\x01lr\x00\xff\x01lr\x05"), []byte("\x01lk\x09"), true)
	f.Add([]byte(nil), []byte("\x01lR\x03\x01a\x01b"), []byte("\x01lz"), true)
	f.Fuzz(func(t *testing.T, snap, seg1, seg2 []byte, framed bool) {
		dir := t.TempDir()
		write := func(name string, data []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		first := uint64(1)
		if len(snap) > 0 {
			first = 2
			write(snapshotName(first), snap)
		}
		var seq uint64
		for i, data := range [][]byte{seg1, seg2} {
			if framed {
				buf := []byte(segmentMagic)
				for _, change := range bytes.Split(data, []byte{0xFF}) {
					seq++
					if buf, err = appendRecord(buf, seq, change); err != nil {
						t.Fatal(err)
					}
				}
				data = buf
			}
			write(segmentName(first+uint64(i)), data)
		}
		m := memory.New()
		j, err := Open(ctx, dir, m, Options{})
		if err != nil {
			var corrupt *CorruptError
			var gap *GapError
			if !errors.As(err, &corrupt) && !errors.As(err, &gap) {
				t.Fatalf("Open failed without a *CorruptError or *GapError: %v", err)
			}
			return
		}
		want := contents(t, m)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		again := memory.New()
		j, err = Open(ctx, dir, again, Options{})
		if err != nil {
			t.Fatalf("what opened once does not open again: %v", err)
		}
		defer j.Close()
		sameContents(t, contents(t, again), want)
	})
}
