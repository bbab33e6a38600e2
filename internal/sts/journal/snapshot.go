package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
)

// A snapshot is every list at the time it was taken, after the magic snapshotMagic, as frames:
//
//	'L' uvarint seq, uvarint line count, uvarint name length, name   a list begins
//	'D' the lines in memory.EncodeLines form                          some of its lines
//	'T' the list's leases as memory.Dump gives them                   after its lines, if any
//	'E' uvarint list count, uvarint journal seq                      the end
//
// seq is the sequence number of the list's last change record that the snapshot holds; journal
// seq, the last one the journal had given when the snapshot began. A list's lines come in 'D'
// frames of about snapshotChunk bytes, so that neither writing nor reading needs a buffer the
// size of a list. A snapshot is written to a temporary file and renamed when complete, so any
// damage in one is corruption.
const (
	snapshotMagic = "STSSNAP1"
	frameList     = 'L'
	frameLines    = 'D'
	frameLeases   = 'T'
	frameEnd      = 'E'
	snapshotChunk = 1 << 20
)

// errAborted stops a snapshot when the journal closes.
var errAborted = errors.New("snapshot abandoned: the journal is closing")

// writeSnapshot writes the snapshot of st to path, synced: the lists as st.Dump hands them over,
// and seq. It stops with errAborted as soon as stop is closed.
func writeSnapshot(path string, st State, seq uint64, stop <-chan struct{}) (err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.WriteString(snapshotMagic); err != nil {
		return err
	}
	var frame []byte
	put := func(build func(b []byte) []byte) error {
		b, start := beginFrame(frame[:0])
		b = build(b)
		if err := finishFrame(b, start); err != nil {
			return err
		}
		frame = b
		_, err := w.Write(b)
		return err
	}
	lists := 0
	err = st.Dump(func(name string, listSeq uint64, lines []string, leases []byte) error {
		select {
		case <-stop:
			return errAborted
		default:
		}
		lists++
		err := put(func(b []byte) []byte {
			b = binary.AppendUvarint(append(b, frameList), listSeq)
			b = binary.AppendUvarint(b, uint64(len(lines)))
			return append(binary.AppendUvarint(b, uint64(len(name))), name...)
		})
		for len(lines) > 0 && err == nil {
			n, size := 0, 0
			for n < len(lines) && (n == 0 || size < snapshotChunk) {
				size += len(lines[n]) + 2
				n++
			}
			chunk := lines[:n]
			lines = lines[n:]
			err = put(func(b []byte) []byte { return memory.EncodeLines(append(b, frameLines), chunk) })
		}
		if leases != nil && err == nil {
			err = put(func(b []byte) []byte { return append(append(b, frameLeases), leases...) })
		}
		return err
	})
	if err != nil {
		return err
	}
	err = put(func(b []byte) []byte {
		return binary.AppendUvarint(binary.AppendUvarint(append(b, frameEnd), uint64(lists)), seq)
	})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// readSnapshot restores the snapshot at path into st and returns the seq above which new records
// must be numbered.
func readSnapshot(path string, st State) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if len(data) < len(snapshotMagic) || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return 0, &CorruptError{Path: path, Offset: 0, Reason: "not a snapshot (bad magic)"}
	}
	r := &frameReader{path: path, data: data, off: len(snapshotMagic)}
	var (
		name    string
		listSeq uint64
		maxSeq  uint64   // the highest seq of a list
		want    uint64   // lines the current list announced
		lines   []string // its lines so far
		leases  []byte   // its leases
		open    bool     // a list has begun
		lists   uint64
	)
	finishList := func() error {
		if !open {
			return nil
		}
		if uint64(len(lines)) != want {
			return fmt.Errorf("list %q has %d of its %d lines", name, len(lines), want)
		}
		if err := st.RestoreList(name, listSeq, lines, leases); err != nil {
			return fmt.Errorf("list %q: %w", name, err)
		}
		maxSeq = max(maxSeq, listSeq)
		open, lines, leases = false, nil, nil
		return nil
	}
	for {
		at := r.off
		payload, err := r.next()
		if errors.Is(err, io.EOF) {
			return 0, &CorruptError{Path: path, Offset: int64(at), Reason: "the snapshot ends without its end record"}
		}
		if err != nil {
			return 0, err
		}
		bad := func(reason string) error { return &CorruptError{Path: path, Offset: int64(at), Reason: reason} }
		if len(payload) == 0 {
			return 0, bad("empty record")
		}
		fields := string(payload[1:])
		switch payload[0] {
		case frameList:
			if err := finishList(); err != nil {
				return 0, bad(err.Error())
			}
			var ok bool
			if listSeq, fields, ok = uvarint(fields); !ok {
				return 0, bad("bad list record")
			}
			if want, fields, ok = uvarint(fields); !ok || want > uint64(len(data)) {
				return 0, bad("bad list record")
			}
			var n uint64
			if n, fields, ok = uvarint(fields); !ok || n != uint64(len(fields)) {
				return 0, bad("bad list record")
			}
			name, lines, open = fields, make([]string, 0, want), true
			lists++
		case frameLines:
			chunk, err := memory.DecodeLines(fields)
			if err != nil || !open || uint64(len(lines)+len(chunk)) > want {
				return 0, bad("lines that belong to no list, or more than it announced")
			}
			lines = append(lines, chunk...)
		case frameLeases:
			if !open || leases != nil || uint64(len(lines)) != want {
				return 0, bad("leases that belong to no list, or come before its lines")
			}
			leases = []byte(fields)
		case frameEnd:
			if err := finishList(); err != nil {
				return 0, bad(err.Error())
			}
			count, rest, ok := uvarint(fields)
			seq, rest2, ok2 := uvarint(rest)
			if !ok || !ok2 || rest2 != "" || count != lists {
				return 0, bad(fmt.Sprintf("the end record does not match the %d lists read", lists))
			}
			if r.off != len(data) {
				return 0, &CorruptError{Path: path, Offset: int64(r.off), Reason: "data after the end record"}
			}
			// Lists copied while records went on carry seqs above the snapshot's, whose records
			// are in the next segment, if they reached the disk. New records must be numbered
			// above them either way: replay skips a record at or below its list's seq.
			return max(seq, maxSeq), nil
		default:
			return 0, bad(fmt.Sprintf("unknown record kind %q", payload[0]))
		}
	}
}

// uvarint decodes a uvarint at the start of s.
func uvarint(s string) (uint64, string, bool) {
	v, n := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if n <= 0 {
		return 0, "", false
	}
	return v, s[n:], true
}
