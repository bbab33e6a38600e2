package memory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

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
//	opLease          uvarint length, id, uvarint n, uvarint expiry (Unix ms), uvarint max deliveries
//	                                          the last n lines this record removed, held under a lease
//	opAck            uvarint length, id, uvarint which   the lease's line which−1 (0: all of them)
//	                                          acknowledged
//	opReturn         uvarint length, id, uvarint which, how   the lease's line(s) given back, their
//	                                          returns counted; the steps that follow put them back
//	                                          (the dead letters went first, in their list's record)
//	opExtend         uvarint length, id, uvarint expiry (Unix ms)   the lease extended
//	opOutcome        the outcome of the change for its store.Request (appendOutcome)
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
	opLease   byte = 'L'
	opAck     byte = 'A'
	opReturn  byte = 'X'
	opExtend  byte = 'E'
	opOutcome byte = 'O'
)

// How a lease ended, in an opReturn step.
const (
	returnExpired  byte = 'e'
	returnReleased byte = 'r'
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

func appendLease(b []byte, le *lease) []byte {
	b = appendString(append(b, opLease), le.id)
	b = binary.AppendUvarint(b, uint64(len(le.lines)))
	b = binary.AppendUvarint(b, uint64(le.expires.UnixMilli()))
	return binary.AppendUvarint(b, uint64(le.maxDeliveries))
}

// appendAck records the acknowledgement of lease id's line which, or of all its lines (which < 0).
func appendAck(b []byte, id string, which int) []byte {
	return binary.AppendUvarint(appendString(append(b, opAck), id), uint64(which+1))
}

func appendReturn(b []byte, id string, which int, how string) []byte {
	b = binary.AppendUvarint(appendString(append(b, opReturn), id), uint64(which+1))
	if how == store.LeaseReleased {
		return append(b, returnReleased)
	}
	return append(b, returnExpired)
}

func appendExtend(b []byte, id string, expires time.Time) []byte {
	return binary.AppendUvarint(appendString(append(b, opExtend), id), uint64(expires.UnixMilli()))
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

// StartRecording makes m hand a record of every change to rec before the change returns, and
// starts the expiry timers of the leases restored, which Replay and RestoreList leave unarmed so
// that no expiry changes a list before the restore is complete. Call it once, after restoring
// the state and before serving.
func (m *Memory) StartRecording(rec Recorder) {
	m.recorder = rec
	for _, l := range m.sortedLists() {
		l.mu.Lock()
		for _, le := range l.leases {
			if le.timer == nil {
				m.arm(l, le)
			}
		}
		l.mu.Unlock()
	}
}

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
// changed anything or created the list, after settling the charge of the list's UNIQUE index.
// l must still be locked, so that the records of a list are in order.
func (m *Memory) commit(l *list, created bool) Commit {
	m.chargeIndex(l)
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
	if seq <= l.seq {
		return nil
	}
	before := l.size()
	defer func() { m.bytes.Add(l.size() - before) }()
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
				size += store.LineCost(line)
			}
			l.replace(lines, size)
		case opLease:
			var le *lease
			if le, rest, err = readLease(rest, removed); err != nil {
				return fmt.Errorf("list %q: %w", name, err)
			}
			removed = removed[:len(removed)-len(le.lines)]
			l.hold(le)
			m.leases.start(le.id, l)
		case opAck, opReturn, opExtend:
			if rest, err = m.replayLeaseStep(l, op, rest); err != nil {
				return fmt.Errorf("list %q: %w", name, err)
			}
		case opOutcome:
			var id string
			var o *outcome
			if id, o, rest, err = readOutcome(rest); err != nil {
				return fmt.Errorf("list %q: %w", name, err)
			}
			m.restoreOutcome(l, id, o)
		default:
			return fmt.Errorf("%w: list %q: unknown step %q", errMalformed, name, op)
		}
	}
	l.seq = seq
	return nil
}

// readLease decodes an opLease step, whose lines are the last ones removed.
func readLease(s string, removed []string) (*lease, string, error) {
	id, rest, err := readString(s)
	if err != nil {
		return nil, "", err
	}
	var n, expires, maxDeliveries uint64
	for _, v := range []*uint64{&n, &expires, &maxDeliveries} {
		if *v, rest, err = readUvarint(rest); err != nil {
			return nil, "", err
		}
	}
	if n == 0 || n > uint64(len(removed)) {
		return nil, "", fmt.Errorf("%w: lease %s holds %d lines, %d removed", errMalformed, id, n, len(removed))
	}
	lines := slices.Clone(removed[len(removed)-int(n):])
	return &lease{id: id, lines: lines, expires: time.UnixMilli(int64(expires)), maxDeliveries: int(maxDeliveries)}, rest, nil
}

// replayLeaseStep applies an opAck, opReturn or opExtend step to l.
func (m *Memory) replayLeaseStep(l *list, op byte, s string) (string, error) {
	id, rest, err := readString(s)
	if err != nil {
		return "", err
	}
	var v uint64
	if v, rest, err = readUvarint(rest); err != nil {
		return "", err
	}
	le := l.leases[id]
	if le == nil {
		return "", fmt.Errorf("%w: no lease %s", errMalformed, id)
	}
	if op == opExtend {
		le.expires = time.UnixMilli(int64(v))
		return rest, nil
	}
	which := int(v) - 1
	if which >= len(le.lines) {
		return "", fmt.Errorf("%w: lease %s has no line %d", errMalformed, id, which)
	}
	how := ""
	if op == opAck {
		l.ack(le, which) // Replay counts the bytes
	} else {
		if rest == "" {
			return "", fmt.Errorf("%w: a return without its way", errMalformed)
		}
		how = store.LeaseExpired
		if rest[0] == returnReleased {
			how = store.LeaseReleased
		}
		rest = rest[1:]
		l.giveBack(le, which)
	}
	if len(le.lines) == 0 {
		m.leases.end(id, how)
	}
	return rest, nil
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
// the snapshot holds for it and its leases in the form Dump gave them (nil: none). Nothing is
// recorded and no limit is checked.
func (m *Memory) RestoreList(name string, seq uint64, lines []string, leases []byte) error {
	l, _ := m.lookupOrCreate(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	var size int64
	for _, line := range lines {
		size += store.LineCost(line)
	}
	before := l.size()
	l.replace(lines, size)
	l.seq = seq
	err := m.restoreLeases(l, string(leases))
	m.bytes.Add(l.size() - before)
	return err
}

// Dump hands every list, sorted by name, to emit with the sequence number of its last record and
// its leases (nil when it has none, nor any return counted): what a snapshot holds. Each list is
// copied under its lock, one at a time, so Dump does not stop the store; the lists are therefore
// not one instant's state, which their sequence numbers make up for on restore.
func (m *Memory) Dump(emit func(name string, seq uint64, lines []string, leases []byte) error) error {
	for _, l := range m.sortedLists() {
		l.mu.Lock()
		lines := slices.AppendSeq(make([]string, 0, l.lines.len()), l.lines.all())
		seq, leases := l.seq, l.encodeLeases()
		l.mu.Unlock()
		if err := emit(l.name, seq, lines, leases); err != nil {
			return err
		}
	}
	return nil
}

// encodeLeases is the leases of l in a snapshot: the counts returned and dead-lettered, the
// returns per line, each lease (id, expiry in Unix ms, max deliveries, lines), then the outcomes
// of requests (encodeOutcomes; absent from a snapshot written before they were kept).
func (l *list) encodeLeases() []byte {
	if len(l.leases) == 0 && len(l.returns) == 0 && l.returned == 0 && l.deadLettered == 0 && len(l.outcomes) == 0 {
		return nil
	}
	b := binary.AppendUvarint(nil, uint64(l.returned))
	b = binary.AppendUvarint(b, uint64(l.deadLettered))
	b = binary.AppendUvarint(b, uint64(len(l.returns)))
	for line, n := range l.returns {
		b = binary.AppendUvarint(appendString(b, line), uint64(n))
	}
	b = binary.AppendUvarint(b, uint64(len(l.leases)))
	for _, le := range l.leases {
		b = appendString(b, le.id)
		b = binary.AppendUvarint(b, uint64(le.expires.UnixMilli()))
		b = binary.AppendUvarint(b, uint64(le.maxDeliveries))
		b = EncodeLines(b, le.lines)
	}
	return l.encodeOutcomes(b)
}

// restoreLeases gives l, locked, the leases encodeLeases wrote in s.
func (m *Memory) restoreLeases(l *list, s string) error {
	if s == "" {
		return nil
	}
	var returned, deadLettered, count uint64
	var err error
	for _, v := range []*uint64{&returned, &deadLettered, &count} {
		if *v, s, err = readUvarint(s); err != nil {
			return err
		}
	}
	l.returned, l.deadLettered = int64(returned), int64(deadLettered)
	if count > uint64(len(s)) {
		return fmt.Errorf("%w: %d returns in %d bytes", errMalformed, count, len(s))
	}
	l.returns = make(map[string]int, count)
	for range count {
		var line string
		var n uint64
		if line, s, err = readString(s); err != nil {
			return err
		}
		if n, s, err = readUvarint(s); err != nil {
			return err
		}
		l.returns[line] = int(n)
	}
	if count, s, err = readUvarint(s); err != nil {
		return err
	}
	for range count {
		le := &lease{}
		var expires, maxDeliveries uint64
		if le.id, s, err = readString(s); err != nil {
			return err
		}
		for _, v := range []*uint64{&expires, &maxDeliveries} {
			if *v, s, err = readUvarint(s); err != nil {
				return err
			}
		}
		if le.lines, s, err = readLines(s); err != nil {
			return err
		}
		le.expires, le.maxDeliveries = time.UnixMilli(int64(expires)), int(maxDeliveries)
		l.hold(le)
		m.leases.start(le.id, l)
	}
	if s == "" {
		return nil
	}
	if s, err = m.restoreOutcomes(l, s); err != nil {
		return err
	}
	if s != "" {
		return fmt.Errorf("%w: %d bytes after the outcomes", errMalformed, len(s))
	}
	return nil
}
