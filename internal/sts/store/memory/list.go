package memory

import (
	"sync"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// list is one named list. Every change to its lines goes through insert, remove, keep and replace
// under mu: the one place that keeps the byte count and writes the change record (change.go).
type list struct {
	mu    sync.Mutex
	name  string
	lines chunkList
	// counts says how many times each line occurs, for unique adds. It stays nil until the first
	// unique add, so lists never used that way pay nothing for it, and is dropped when the list
	// is emptied or replaced, which also gives back the memory of a map that never shrinks.
	counts map[string]int
	bytes  int64 // the bytes of the lines held
	// digest is the store.ListInfo.Digest of the list; not journaled, so a restored list has none.
	digest string
	// restored marks a list that the journal restored: LoadOnce keeps it.
	restored bool

	// seq is the sequence number of the last change record of this list: restoring skips the
	// records a snapshot of the list already holds.
	seq uint64
	// recording is set while an operation's change record is being built in change, after the
	// list's name, which ends at changeHead.
	recording  bool
	change     []byte
	changeHead int
	// lastCommit is the Commit of the list's last recorded change (nil before the first). An
	// operation that changes nothing waits for it before it answers, because its answer depends
	// on that change: a RESET or a "No more line" after a consume not yet durable must not be
	// answered before the consume is, or a crash would undo what the answer said.
	lastCommit Commit

	// waiters are the reads waiting for lines, in arrival order (wait.go).
	waiters []*waiter
	// testing is held while the matches of waiting FINDs run on lines brought to the list, off
	// mu (wait.go): they run one at a time, and never hold up a change. evaluating says a
	// goroutine runs them (guarded by mu).
	testing    sync.Mutex
	evaluating bool
	// pending marks a list that reads wait for but that nobody has created: it is not a key yet.
	// Guarded by Memory.mu and mu together.
	pending bool
}

func (l *list) insert(line string, pos store.Position) {
	if pos == store.First {
		l.lines.pushFront(line)
	} else {
		l.lines.pushBack(line)
	}
	if l.counts != nil {
		l.counts[line]++
	}
	l.bytes += int64(len(line))
	if l.recording {
		l.change = appendInsert(l.change, pos, line)
	}
}

func (l *list) remove(i int) string {
	line := l.lines.removeAt(i)
	switch {
	case l.counts == nil:
	case l.lines.len() == 0:
		l.counts = nil
	case l.counts[line] == 1:
		delete(l.counts, line)
	default:
		l.counts[line]--
	}
	l.bytes -= int64(len(line))
	if l.recording {
		l.change = appendRemove(l.change, i)
	}
	return line
}

// keep appends the lines that the current operation removed, in the order given: the KEEP=TRUE
// of READ, READMULTI and FIND. It is recorded by count, since the record has the removals.
func (l *list) keep(removed []string) {
	for _, line := range removed {
		l.lines.pushBack(line)
		if l.counts != nil {
			l.counts[line]++
		}
		l.bytes += int64(len(line))
	}
	if l.recording {
		l.change = appendKeep(l.change, len(removed))
	}
}

// replace takes ownership of lines as the list's new content; size is their bytes.
func (l *list) replace(lines []string, size int64) {
	l.lines = newChunkList(lines)
	l.counts = nil
	l.bytes = size
	if l.recording {
		l.change = appendReplace(l.change, lines)
	}
}

// contains reports whether the list holds line, building the index on first use.
func (l *list) contains(line string) bool {
	if l.counts == nil {
		l.counts = make(map[string]int, l.lines.len())
		for s := range l.lines.all() {
			l.counts[s]++
		}
	}
	return l.counts[line] > 0
}
