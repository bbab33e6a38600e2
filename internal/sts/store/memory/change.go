package memory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Recorder keeps a durable record of every change (the journal), so that a restarted store can
// be restored exactly: see Memory.StartRecording.
type Recorder interface {
	// Record appends one change record, copying it, and returns its sequence number, greater
	// than every earlier one, and the Commit that says when the record is durable. Memory calls
	// it under the changed list's lock, so the records of one list are in the order of its
	// changes; it must therefore not wait for I/O.
	Record(change []byte) (seq uint64, commit Commit)
	// MaxChange is the size of the largest change record Record can take. Memory refuses a change
	// that brings lines (Add, Insert, Replace) whose record would be larger before making it: once
	// made, a change that cannot be recorded would leave the lists served apart from the lists on
	// disk.
	MaxChange() int64
}

// Commit is a recorded change on its way to disk.
type Commit interface {
	// Wait returns once the record is durable, or with the reason it cannot be.
	Wait() error
}

// committed is the Commit of a change that needs no record: nothing changed, or nothing records.
type committed struct{}

func (committed) Wait() error { return nil }

// A change record says what one operation did to one list, step by step, so that replaying the
// records on the state they started from gives the same lists line for line. It holds the list's
// name (uvarint length, bytes), then the steps, each an opcode byte and its operands:
//
//	opFront, opBack  uvarint length, line     a line added at the front, at the end
//	opRemove         uvarint index            the line at index removed
//	opKeep           uvarint n                the last n lines this record removed, appended
//	                                          at the end in the order they were removed
//	opReplace        uvarint count, then count × (uvarint length, line)   the content replaced
//
// A random pick is recorded as the index it took, so a replay needs no random source. Every
// record creates its list if the list does not exist; a record without steps does only that
// (Ensure, or an Add that created the list and then failed).
const (
	opFront   byte = 'f'
	opBack    byte = 'b'
	opRemove  byte = 'r'
	opKeep    byte = 'k'
	opReplace byte = 'R'
)

// maxKeptChange is the largest change buffer a list keeps for its next operation; a larger one
// (a Replace) is let go, so that an idle list does not hold a copy of its content.
const maxKeptChange = 64 << 10

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendInsert(b []byte, pos store.Position, line string) []byte {
	op := opBack
	if pos == store.First {
		op = opFront
	}
	return appendString(append(b, op), line)
}

func appendRemove(b []byte, i int) []byte {
	return binary.AppendUvarint(append(b, opRemove), uint64(i))
}

func appendKeep(b []byte, n int) []byte { return binary.AppendUvarint(append(b, opKeep), uint64(n)) }

func appendReplace(b []byte, lines []string) []byte {
	size := 0
	for _, line := range lines {
		size += len(line) + binary.MaxVarintLen32
	}
	b = slices.Grow(b, 1+binary.MaxVarintLen64+size)
	b = binary.AppendUvarint(append(b, opReplace), uint64(len(lines)))
	for _, line := range lines {
		b = appendString(b, line)
	}
	return b
}

// recordable refuses, with a *LimitError naming LimitRecordBytes, bringing lines to the list
// called name in one change whose record the recorder could not take.
func (m *Memory) recordable(name string, lines []string) error {
	if m.recorder == nil {
		return nil
	}
	// The name, a Replace's opcode and count, then per line an Insert's opcode or nothing, a
	// length and the line: the larger of the two records these lines can make.
	size := int64(len(name) + 2*binary.MaxVarintLen64 + 1)
	for _, line := range lines {
		size += int64(1 + uvarintLen(len(line)) + len(line))
	}
	if max := m.recorder.MaxChange(); size > max {
		return &store.LimitError{Limit: store.LimitRecordBytes, Max: max}
	}
	return nil
}

// uvarintLen is the length of n's uvarint encoding: 7 bits a byte.
func uvarintLen(n int) int { return (bits.Len64(uint64(n)|1) + 6) / 7 }

// Writable is what a Recorder may also implement to refuse changes before they are made: while
// it answers an error (its disk is full or failing), every operation that would change a list
// (reads that consume included) fails with store.ErrUnavailable wrapping it, and nothing changes.
// A change already under way when the recorder stops writing is still recorded: its Commit waits.
type Writable interface {
	Writable() error
}

// writable refuses a change while the recorder says it cannot record one.
func (m *Memory) writable() error {
	w, ok := m.recorder.(Writable)
	if !ok {
		return nil
	}
	if err := w.Writable(); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// StartRecording makes m hand a record of every change to rec before the change returns. Call it
// once, after restoring the state and before serving.
func (m *Memory) StartRecording(rec Recorder) { m.recorder = rec }

// begin starts the change record of an operation on l, which must be locked.
func (m *Memory) begin(l *list) {
	if m.recorder == nil {
		return
	}
	l.recording = true
	l.change = appendString(l.change[:0], l.name)
	l.changeHead = len(l.change)
}

// commit ends the operation begun on l and hands its record to the recorder if the operation
// changed anything or created the list. l must still be locked, so that the records of a list
// are in order.
func (m *Memory) commit(l *list, created bool) Commit {
	if !l.recording {
		return committed{}
	}
	l.recording = false
	if len(l.change) == l.changeHead && !created {
		return l.settled()
	}
	seq, c := m.recorder.Record(l.change)
	l.seq, l.lastCommit = seq, c
	if cap(l.change) > maxKeptChange {
		l.change = nil
	}
	return c
}

// settled is the Commit an answer that changed nothing in l waits for: l's last change.
func (l *list) settled() Commit {
	if l.lastCommit == nil {
		return committed{}
	}
	return l.lastCommit
}

// durable waits for c, if any, and wraps a failure in ErrNotRecorded.
func durable(c Commit) error {
	if c == nil {
		return nil
	}
	if err := c.Wait(); err != nil {
		return fmt.Errorf("%w: %w", store.ErrNotRecorded, err)
	}
	return nil
}

// errMalformed is a change record that cannot be decoded or does not apply to its list.
var errMalformed = errors.New("malformed change record")

// Replay applies a change record read back from the journal, with its sequence number. A record
// that the list's snapshot already holds (seq not above the list's) is skipped. Nothing is
// recorded and no limit is checked: the state is restored as it was.
func (m *Memory) Replay(seq uint64, change []byte) error {
	text := string(change) // one allocation, which the added lines share
	name, rest, err := readString(text)
	if err != nil {
		return err
	}
	l, _ := m.lookupOrCreate(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.restored = true
	if seq <= l.seq {
		return nil
	}
	before := l.bytes
	defer func() { m.bytes.Add(l.bytes - before) }()
	var removed []string
	for rest != "" {
		op := rest[0]
		rest = rest[1:]
		switch op {
		case opFront, opBack:
			var line string
			if line, rest, err = readString(rest); err != nil {
				return err
			}
			pos := store.Last
			if op == opFront {
				pos = store.First
			}
			l.insert(line, pos)
		case opRemove:
			var i uint64
			if i, rest, err = readUvarint(rest); err != nil {
				return err
			}
			if i >= uint64(l.lines.len()) {
				return fmt.Errorf("%w: list %q: removes line %d of %d", errMalformed, name, i, l.lines.len())
			}
			removed = append(removed, l.remove(int(i)))
		case opKeep:
			var n uint64
			if n, rest, err = readUvarint(rest); err != nil {
				return err
			}
			if n > uint64(len(removed)) {
				return fmt.Errorf("%w: list %q: keeps %d lines, %d removed", errMalformed, name, n, len(removed))
			}
			l.keep(removed[len(removed)-int(n):])
		case opReplace:
			var lines []string
			if lines, rest, err = readLines(rest); err != nil {
				return err
			}
			size := int64(0)
			for _, line := range lines {
				size += int64(len(line))
			}
			l.replace(lines, size)
		default:
			return fmt.Errorf("%w: list %q: unknown step %q", errMalformed, name, op)
		}
	}
	l.seq = seq
	return nil
}

// readUvarint decodes a uvarint at the start of s.
func readUvarint(s string) (uint64, string, error) {
	var v uint64
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, s[i+1:], nil
		}
	}
	return 0, "", fmt.Errorf("%w: bad number", errMalformed)
}

// readString decodes a length-prefixed string at the start of s; it shares s's memory.
func readString(s string) (string, string, error) {
	n, rest, err := readUvarint(s)
	if err != nil {
		return "", "", err
	}
	if n > uint64(len(rest)) {
		return "", "", fmt.Errorf("%w: a string of %d bytes with %d left", errMalformed, n, len(rest))
	}
	return rest[:n], rest[n:], nil
}

// readLines decodes a count and as many length-prefixed strings.
func readLines(s string) ([]string, string, error) {
	count, rest, err := readUvarint(s)
	if err != nil {
		return nil, "", err
	}
	if count > uint64(len(rest)) { // each line takes at least its length byte
		return nil, "", fmt.Errorf("%w: %d lines in %d bytes", errMalformed, count, len(rest))
	}
	lines := make([]string, count)
	for i := range lines {
		if lines[i], rest, err = readString(rest); err != nil {
			return nil, "", err
		}
	}
	return lines, rest, nil
}

// EncodeLines is the form in which snapshots store lines: a count and as many length-prefixed
// strings. DecodeLines reads it back.
func EncodeLines(b []byte, lines []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(lines)))
	for _, line := range lines {
		b = appendString(b, line)
	}
	return b
}

// DecodeLines decodes what EncodeLines wrote; the lines share text's memory.
func DecodeLines(text string) ([]string, error) {
	lines, rest, err := readLines(text)
	if err == nil && rest != "" {
		err = fmt.Errorf("%w: %d bytes after the lines", errMalformed, len(rest))
	}
	return lines, err
}

// RestoreList sets a list's content from a snapshot, with the sequence number of the last record
// the snapshot holds for it. Nothing is recorded and no limit is checked.
func (m *Memory) RestoreList(name string, seq uint64, lines []string) {
	l, _ := m.lookupOrCreate(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	var size int64
	for _, line := range lines {
		size += int64(len(line))
	}
	m.bytes.Add(size - l.bytes)
	l.replace(lines, size)
	l.seq, l.restored = seq, true
}

// Dump hands every list, sorted by name, to emit with the sequence number of its last record:
// what a snapshot holds. Each list is copied under its lock, one at a time, so Dump does not
// stop the store; the lists are therefore not one instant's state, which their sequence numbers
// make up for on restore.
func (m *Memory) Dump(emit func(name string, seq uint64, lines []string) error) error {
	for _, l := range m.sortedLists() {
		l.mu.Lock()
		lines := slices.AppendSeq(make([]string, 0, l.lines.len()), l.lines.all())
		seq := l.seq
		l.mu.Unlock()
		if err := emit(l.name, seq, lines); err != nil {
			return err
		}
	}
	return nil
}
