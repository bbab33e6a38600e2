package memory

import (
	"slices"
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
	// countsCharged is what counts is charged in the store's total (chargeIndex).
	countsCharged int64
	bytes         int64 // the bytes of the lines held
	// digest is the store.ListInfo.Digest of the list; not journaled, so a restored list has none.
	digest string

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

	// leases hold lines read under a lease (lease.go), keyed by id; leasedLines and leasedBytes
	// are their size, which the store's limits and byte count go on counting.
	leases      map[string]*lease
	leasedLines int
	leasedBytes int64
	// returns counts, per line value, how many times a lease gave the line back since it was
	// last acknowledged (for dead letters); nil until a lease first gives one back.
	returns map[string]int
	// returned and deadLettered are store.ListInfo's counts.
	returned, deadLettered int64

	// outcomes are the outcomes of the changes made to the list under a store.Request, by the
	// request's id, and outcomeOrder their ids in the order they were recorded (requests.go).
	outcomes     map[string]*outcome
	outcomeOrder []string

	// scanners are the FINDs scanning the list off its lock (scan.go), each the number of the
	// log's events it has seen; while there are any, scanLog logs the changes that move indexes,
	// and scanSeen numbers the events dropped before it.
	scanners []*int
	scanLog  []scanEvent
	scanSeen int

	// waiters are the reads waiting for lines, in arrival order (wait.go).
	waiters []*waiter
	// finding is the list's gate for FINDs' matches (gated, in wait.go): one at a time.
	finding chan struct{}
	// testing is held while the matches of waiting FINDs run on lines brought to the list, off
	// mu (wait.go): they run one at a time, and never hold up a change. evaluating says a
	// goroutine runs them (guarded by mu).
	testing    sync.Mutex
	evaluating bool
	// pending marks a list that reads wait for but that nobody has created: it is not a key yet.
	// Guarded by Memory.mu and mu together.
	pending bool
}

func newList(name string) *list {
	return &list{name: name, finding: make(chan struct{}, 1)}
}

func (l *list) insert(line string, pos store.Position) {
	if pos == store.First {
		l.lines.pushFront(line)
		l.logScan(scanEvent{op: opFront, line: line})
	} else {
		l.lines.pushBack(line)
	}
	if l.counts != nil {
		l.counts[line]++
	}
	l.bytes += store.LineCost(line)
	if l.recording {
		l.change = appendInsert(l.change, pos, line)
	}
}

// insertAll inserts lines at the front or the end, keeping their order.
func (l *list) insertAll(lines []string, pos store.Position) {
	if pos == store.First {
		for i := len(lines) - 1; i >= 0; i-- {
			l.insert(lines[i], store.First)
		}
		return
	}
	for _, line := range lines {
		l.insert(line, store.Last)
	}
}

func (l *list) remove(i int) string {
	line := l.lines.removeAt(i)
	l.logScan(scanEvent{op: opRemove, i: i})
	switch {
	case l.counts == nil:
	case l.lines.len() == 0:
		l.counts = nil
	case l.counts[line] == 1:
		delete(l.counts, line)
	default:
		l.counts[line]--
	}
	l.bytes -= store.LineCost(line)
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
		l.bytes += store.LineCost(line)
	}
	if l.recording {
		l.change = appendKeep(l.change, len(removed))
	}
}

// replace takes ownership of lines as the list's new content; size is their bytes.
func (l *list) replace(lines []string, size int64) {
	l.lines = newChunkList(lines)
	l.logScan(scanEvent{op: opReplace})
	l.counts = nil
	l.returns = l.leasedReturns()
	l.bytes = size
	if l.recording {
		l.change = appendReplace(l.change, lines)
	}
}

// leasedReturns is a copy of the returns of the lines the leases of l hold, which may come back
// yet, or nil: the returns of the lines a replacement drops go with them (the map never shrinks,
// and its keys hold the lines' text).
func (l *list) leasedReturns() map[string]int {
	var kept map[string]int
	for _, le := range l.leases {
		for _, line := range le.lines {
			if n := l.returns[line]; n > 0 {
				if kept == nil {
					kept = map[string]int{}
				}
				kept[line] = n
			}
		}
	}
	return kept
}

// contains reports whether the list holds line, in its lines or its leases, building the index
// on first use.
func (l *list) contains(line string) bool {
	if l.counts == nil {
		l.counts = make(map[string]int, l.lines.len()+l.leasedLines)
		for s := range l.lines.all() {
			l.counts[s]++
		}
		for _, le := range l.leases {
			for _, s := range le.lines {
				l.counts[s]++
			}
		}
	}
	return l.counts[line] > 0
}

// uncount takes line out of the UNIQUE index, if there is one.
func (l *list) uncount(line string) {
	if l.counts == nil {
		return
	}
	if l.counts[line] <= 1 {
		delete(l.counts, line)
	} else {
		l.counts[line]--
	}
}

// chargeIndex brings what the store's total counts for the UNIQUE index of l to its entries
// (store.UniqueOverhead each), once a change has grown or shrunk it, or dropped it.
func (m *Memory) chargeIndex(l *list) {
	if d := int64(len(l.counts))*store.UniqueOverhead - l.countsCharged; d != 0 {
		m.bytes.Add(d)
		l.countsCharged += d
	}
}

// size is the bytes the list holds, leased lines included: what the store's total counts.
func (l *list) size() int64 { return l.bytes + l.leasedBytes }

// held is the number of lines the list holds, leased lines included: what its limit counts.
func (l *list) held() int { return l.lines.len() + l.leasedLines }

// consumed forgets the returns of lines a read took for good.
func (l *list) consumed(picked []string) {
	if l.returns == nil {
		return
	}
	for _, line := range picked {
		delete(l.returns, line)
	}
}

// hold puts le, whose lines remove just took out of the list, among the list's leases.
func (l *list) hold(le *lease) {
	if l.leases == nil {
		l.leases = map[string]*lease{}
	}
	l.leases[le.id] = le
	l.leasedBytes += leaseCost(le)
	for _, line := range le.lines {
		if l.counts != nil {
			l.counts[line]++
		}
		l.leasedBytes += store.LineCost(line)
	}
	l.leasedLines += len(le.lines)
}

// drop takes the lines of le at index which (all of them when which < 0) out of the lease, ending
// it when none is left, and returns them; the caller says where they go.
func (l *list) drop(le *lease, which int) []string {
	var gone []string
	if which < 0 {
		gone, le.lines = le.lines, nil
	} else {
		gone = []string{le.lines[which]}
		le.lines = slices.Delete(le.lines, which, which+1)
	}
	for _, line := range gone {
		l.uncount(line)
		l.leasedBytes -= store.LineCost(line)
	}
	l.leasedLines -= len(gone)
	if len(le.lines) == 0 {
		l.leasedBytes -= leaseCost(le)
		delete(l.leases, le.id)
		if le.timer != nil {
			le.timer.Stop()
		}
	}
	return gone
}

// ack drops the acknowledged lines of le (at which, or all) for good. Their returns are
// forgotten: a line added again later starts its count afresh.
func (l *list) ack(le *lease, which int) {
	for _, line := range l.drop(le, which) {
		if l.returns != nil {
			delete(l.returns, line)
		}
	}
}

// leaseCost is what le costs against Limits.MaxTotalBytes beyond its lines.
func leaseCost(le *lease) int64 { return int64(store.LeaseOverhead + len(le.id)) }

// giveBack drops the lines of le (at which, or all) and counts their returns: those returned
// le.maxDeliveries times are dead, the others go back, which the caller inserts.
func (l *list) giveBack(le *lease, which int) (back, dead []string) {
	max := le.maxDeliveries
	for _, line := range l.drop(le, which) {
		if l.returns == nil {
			l.returns = map[string]int{}
		}
		l.returns[line]++
		if max > 0 && l.returns[line] >= max {
			delete(l.returns, line)
			dead = append(dead, line)
			l.deadLettered++
		} else {
			back = append(back, line)
			l.returned++
		}
	}
	return back, dead
}
