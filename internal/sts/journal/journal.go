package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
)

// Policy says when a change is acknowledged, that is when its Commit's Wait returns.
type Policy int

const (
	// Always acknowledges a change once its record is written and fsynced: a change that was
	// acknowledged survives a crash of the process and of the machine.
	Always Policy = iota
	// Interval acknowledges a change once its record is written to the file, and fsyncs every
	// Options.Interval: an acknowledged change survives a crash of the process, but a crash of
	// the machine may lose the changes of the last interval.
	Interval
)

// Defaults of Options.
const (
	DefaultInterval      = 100 * time.Millisecond
	DefaultSnapshotBytes = 64 << 20
	DefaultRetryInterval = time.Second
)

// Options configure a Journal.
type Options struct {
	Policy   Policy
	Interval time.Duration // fsync period of Interval; DefaultInterval when zero
	// SnapshotBytes is how many bytes of journal are written before a snapshot is taken;
	// DefaultSnapshotBytes when zero.
	SnapshotBytes int64
	// WaitForLock makes Open wait while another server holds the directory, instead of failing
	// with a *LockedError.
	WaitForLock bool
	// ObserveSync, if set, is told how long each fsync of a segment took.
	ObserveSync func(time.Duration)
	// RetryInterval is how often a journal that could not write (a full or failing disk) tries
	// again; DefaultRetryInterval when zero.
	RetryInterval time.Duration
	Log           *slog.Logger // nil: no logging
}

// State is what a journal restores into and snapshots: a *memory.Memory.
type State interface {
	RestoreList(name string, seq uint64, lines []string, leases []byte) error
	Replay(seq uint64, change []byte) error
	Dump(emit func(name string, seq uint64, lines []string, leases []byte) error) error
	StartRecording(rec memory.Recorder)
}

// ErrClosed is the failure of a change recorded after Close.
var ErrClosed = errors.New("journal: closed")

// segmentMagic starts every journal segment.
const segmentMagic = "STSJRNL1"

// Journal is an open state directory; it implements memory.Recorder. Create it with Open.
type Journal struct {
	dir   string
	state State
	opts  Options
	log   *slog.Logger
	lock  *os.File

	mu      sync.Mutex
	seq     uint64   // the last sequence number given
	segment uint64   // the segment new records go to
	batches []*batch // appended records not yet taken by the writer; the last one is open
	closed  bool
	failure error // a record that could not be framed: no record is taken after it
	stalled error // the write or fsync error the writer is retrying: Writable refuses changes

	kick    chan struct{} // there are records to write
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the writer has written everything and ended
	failed  chan struct{} // closed with failure

	// The writer's own.
	file          *os.File
	fileSegment   uint64
	synced        int64    // the bytes of file known to be on disk
	unsynced      [][]byte // written to file after synced, in order: written again after a failure
	syncDir       bool     // file was created: its directory must be synced too
	dirty         bool     // written since the last fsync
	sinceSnapshot int64    // bytes of journal since the last snapshot
	queue         []*batch // batches held back while the journal cannot write, in order
	stalledAt     time.Time

	snapshotting atomic.Bool    // a background snapshot is being taken
	snapshots    sync.WaitGroup // the background snapshot
	snapshotMu   sync.Mutex     // one snapshot at a time
}

var (
	_ memory.Recorder = (*Journal)(nil)
	_ memory.Writable = (*Journal)(nil)
)

// batch is the records that one write (and one fsync) takes: a group commit. Its Wait is the
// Commit of each of its records.
type batch struct {
	segment uint64
	buf     []byte
	staged  bool // buf is in the writer's unsynced
	create  bool // the segment is created even without records (a snapshot's first)
	done    chan struct{}
	err     error
}

func newBatch(segment uint64) *batch { return &batch{segment: segment, done: make(chan struct{})} }

// Wait implements memory.Commit.
func (b *batch) Wait() error {
	<-b.done
	return b.err
}

// refused is the Commit of a record the journal could not take.
type refused struct{ err error }

func (r refused) Wait() error { return r.err }

// Open locks the state directory dir (creating it if needed), restores its snapshot and journal
// into st, and makes st record its changes in the journal from then on. Damage that a crash
// cannot explain fails with a *CorruptError; a directory that another server holds, with a
// *LockedError unless opts.WaitForLock, in which case Open waits for it until ctx ends.
func Open(ctx context.Context, dir string, st State, opts Options) (*Journal, error) {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.SnapshotBytes <= 0 {
		opts.SnapshotBytes = DefaultSnapshotBytes
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	lock, err := lockDir(ctx, dir, opts.WaitForLock, log)
	if err != nil {
		return nil, err
	}
	j := &Journal{
		dir: dir, state: st, opts: opts, log: log, lock: lock,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}), failed: make(chan struct{}),
	}
	if err := j.restore(); err != nil {
		lock.Close()
		return nil, err
	}
	j.batches = []*batch{newBatch(j.segment)}
	st.StartRecording(j)
	if j.sinceSnapshot >= opts.SnapshotBytes {
		j.startSnapshot()
	}
	go j.run()
	return j, nil
}

func segmentName(g uint64) string  { return fmt.Sprintf("journal-%020d.log", g) }
func snapshotName(g uint64) string { return fmt.Sprintf("snapshot-%020d.snap", g) }

// files lists the segments and snapshots of the directory by number, and the leftovers of
// snapshots that were being written.
func (j *Journal) files() (segments, snapshots []uint64, temporary []string, err error) {
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, nil, nil, err
	}
	number := func(name, prefix, suffix string) (uint64, bool) {
		digits, hasPrefix := strings.CutPrefix(name, prefix)
		digits, hasSuffix := strings.CutSuffix(digits, suffix)
		if !hasPrefix || !hasSuffix {
			return 0, false
		}
		g, err := strconv.ParseUint(digits, 10, 64)
		return g, err == nil
	}
	for _, e := range entries {
		name := e.Name()
		if g, ok := number(name, "journal-", ".log"); ok {
			segments = append(segments, g)
		} else if g, ok := number(name, "snapshot-", ".snap"); ok {
			snapshots = append(snapshots, g)
		} else if strings.HasPrefix(name, "snapshot-") && strings.HasSuffix(name, ".tmp") {
			temporary = append(temporary, name)
		}
	}
	slices.Sort(segments)
	slices.Sort(snapshots)
	return segments, snapshots, temporary, nil
}

// restore reads the newest snapshot and the segments from its number on into the state.
func (j *Journal) restore() error {
	segments, snapshots, temporary, err := j.files()
	if err != nil {
		return err
	}
	var base uint64 // the newest snapshot's number; the segments before it are covered by it
	if len(snapshots) > 0 {
		base = snapshots[len(snapshots)-1]
		path := filepath.Join(j.dir, snapshotName(base))
		seq, err := readSnapshot(path, j.state)
		if err != nil {
			return err
		}
		j.seq = seq
		j.log.Info("Restored snapshot", "path", path)
	}
	obsolete := temporary
	for _, g := range snapshots[:max(len(snapshots)-1, 0)] {
		obsolete = append(obsolete, snapshotName(g))
	}
	replayed := segments[:0:0]
	for _, g := range segments {
		if g < base {
			obsolete = append(obsolete, segmentName(g))
		} else {
			replayed = append(replayed, g)
		}
	}
	if err := checkSequence(j.dir, base, replayed); err != nil {
		return err
	}
	var prev uint64 // records are numbered in increasing order across the segments
	for i, g := range replayed {
		n, err := j.replay(filepath.Join(j.dir, segmentName(g)), i == len(replayed)-1, &prev)
		if err != nil {
			return err
		}
		j.sinceSnapshot += n
	}
	j.seq = max(j.seq, prev)
	j.segment = max(base, 1)
	if len(replayed) > 0 {
		j.segment = replayed[len(replayed)-1] + 1 // never append to a segment written before
	}
	for _, name := range obsolete {
		if err := os.Remove(filepath.Join(j.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if len(obsolete) > 0 {
		return syncDir(j.dir)
	}
	return nil
}

// checkSequence refuses segments that do not follow the snapshot base (0: none) one by one: a
// missing snapshot or segment would restore the lists with changes missing, silently. Segment 1
// starts a journal without snapshot; a snapshot's segment has its number and is created with it.
func checkSequence(dir string, base uint64, segments []uint64) error {
	if len(segments) == 0 {
		return nil
	}
	if first := segments[0]; base == 0 && first != 1 {
		return &GapError{Dir: dir, Missing: snapshotName(first), Reason: fmt.Sprintf(
			"%s does not start the journal and no snapshot holds what came before it", segmentName(first))}
	} else if base != 0 && first != base {
		return &GapError{Dir: dir, Missing: segmentName(base), Reason: fmt.Sprintf(
			"%s is followed by %s", snapshotName(base), segmentName(first))}
	}
	for i := 1; i < len(segments); i++ {
		if segments[i] != segments[i-1]+1 {
			missing := segmentName(segments[i-1] + 1)
			if segments[i] > segments[i-1]+2 {
				missing += " to " + segmentName(segments[i]-1)
			}
			return &GapError{Dir: dir, Missing: missing, Reason: fmt.Sprintf("%s is followed by %s", segmentName(segments[i-1]), segmentName(segments[i]))}
		}
	}
	return nil
}

// GapError is a state directory that lacks a snapshot or journal segment: restoring it would
// lose changes without a word, so Open refuses it.
type GapError struct {
	Dir     string
	Missing string // the file name(s) missing
	Reason  string
}

func (e *GapError) Error() string {
	return fmt.Sprintf("journal in %s: %s is missing (%s); restore it, or move the directory away to start empty", e.Dir, e.Missing, e.Reason)
}

// replay applies the records of the segment at path and returns its size. The last segment may
// end with a torn record, which is dropped by truncating the file.
func (j *Journal) replay(path string, last bool, prev *uint64) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if len(data) < len(segmentMagic) || string(data[:len(segmentMagic)]) != segmentMagic {
		if last && strings.HasPrefix(segmentMagic, string(data)) { // created by a crashed server
			j.log.Warn("Dropped an unfinished journal segment", "path", path, "bytes", len(data))
			return 0, os.Remove(path)
		}
		return 0, &CorruptError{Path: path, Offset: 0, Reason: "not a journal segment (bad magic)"}
	}
	r := &frameReader{path: path, data: data, off: len(segmentMagic), mayTear: last}
	records := 0
	for {
		at := r.off
		payload, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errTorn) {
			j.log.Warn("Dropped a torn record at the end of the journal", "path", path, "offset", at, "bytes", len(data)-at)
			if err := truncate(path, int64(at)); err != nil {
				return 0, err
			}
			data = data[:at]
			break
		}
		if err != nil {
			return 0, err
		}
		seq, n := binary.Uvarint(payload)
		if n <= 0 || seq <= *prev {
			return 0, &CorruptError{Path: path, Offset: int64(at), Reason: fmt.Sprintf("record number %d after %d", seq, *prev)}
		}
		if err := j.state.Replay(seq, payload[n:]); err != nil {
			return 0, &CorruptError{Path: path, Offset: int64(at), Reason: err.Error()}
		}
		*prev = seq
		records++
	}
	j.log.Info("Replayed journal segment", "path", path, "records", records)
	return int64(len(data)), nil
}

// truncate cuts the file at path to size, durably.
func truncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes the creation, renaming and removal of files in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Record implements memory.Recorder.
func (j *Journal) Record(change []byte) (uint64, memory.Commit) {
	j.mu.Lock()
	j.seq++
	seq := j.seq
	if err := j.refusal(); err != nil {
		j.mu.Unlock()
		return seq, refused{err}
	}
	b := j.batches[len(j.batches)-1]
	buf, err := appendRecord(b.buf, seq, change)
	if err != nil {
		j.mu.Unlock()
		// The store has changed its lists already: going on without this record would let
		// the lists on disk drift from the ones served, so the journal stops as after a failed
		// write.
		return seq, refused{j.fail(fmt.Errorf("record %d: %w", seq, err))}
	}
	b.buf = buf
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default: // the writer has been kicked already and will take this record too
	}
	return seq, b
}

// MaxChange implements memory.Recorder: a frame's payload holds the sequence number too.
func (j *Journal) MaxChange() int64 { return maxFrame - binary.MaxVarintLen64 }

// appendRecord appends the frame of a journal record: its sequence number, then the change. On
// failure b is returned unchanged.
func appendRecord(b []byte, seq uint64, change []byte) ([]byte, error) {
	buf, start := beginFrame(b)
	buf = append(binary.AppendUvarint(buf, seq), change...)
	if err := finishFrame(buf, start); err != nil {
		return b, err
	}
	return buf, nil
}

// refusal says why no record can be taken now, if so; j.mu must be held.
func (j *Journal) refusal() error {
	if j.failure != nil {
		return j.failure
	}
	if j.closed {
		return ErrClosed
	}
	return nil
}

// run is the writer: it writes the batches as they come, and with Interval fsyncs each period.
func (j *Journal) run() {
	defer close(j.stopped)
	var tick <-chan time.Time
	if j.opts.Policy == Interval {
		t := time.NewTicker(j.opts.Interval)
		defer t.Stop()
		tick = t.C
	}
	retry := time.NewTicker(j.opts.RetryInterval)
	defer retry.Stop()
	for {
		var retrying <-chan time.Time
		if !j.stalledAt.IsZero() {
			retrying = retry.C
		}
		select {
		case <-j.kick:
			j.flush()
		case <-tick:
			j.syncDirty()
		case <-retrying:
			j.repair()
		case <-j.stop:
			j.flush()
			j.syncDirty()
			if !j.stalledAt.IsZero() && !j.repair() {
				// The records held back never reach the disk: their changes are refused, and a
				// restart from what is on disk will not have them.
				j.mu.Lock()
				err := j.stalled
				j.mu.Unlock()
				for _, b := range j.queue {
					j.finish(b, err)
				}
				j.queue = nil
			}
			return
		}
	}
}

// flush writes every batch appended so far; the records appended meanwhile wait for the next.
// While the journal cannot write, the batches are held back, in order, for repair.
func (j *Journal) flush() {
	j.gather()
	j.mu.Lock()
	batches := j.batches
	j.batches = []*batch{newBatch(j.segment)}
	j.mu.Unlock()
	for _, b := range batches {
		if len(j.queue) > 0 {
			j.queue = append(j.queue, b)
			continue
		}
		if err := j.write(b); err != nil {
			j.queue = append(j.queue, b)
			j.stall(err)
			continue
		}
		j.finish(b, nil)
	}
}

// finish acknowledges b's records (err nil) or refuses them.
func (j *Journal) finish(b *batch, err error) {
	b.err = err
	b.buf = nil // lists keep their last Commit (store.list.lastCommit), not its records
	close(b.done)
}

// gather lets the goroutines that are about to record run first, as long as the open batch grows:
// on a busy server a kick comes with the first record of a group, and taking that record alone
// would cost one fsync per few changes. A yield costs microseconds, an fsync a fraction of a
// millisecond.
func (j *Journal) gather() {
	size := -1
	for range maxGatherYields {
		j.mu.Lock()
		grown := len(j.batches[len(j.batches)-1].buf)
		j.mu.Unlock()
		if grown == size {
			return
		}
		size = grown
		runtime.Gosched()
	}
}

// maxGatherYields bounds the yields of one gather.
const maxGatherYields = 8

// write writes b to its segment and, with Always, fsyncs it. After a failure, what the file
// holds past synced is unknown: repair cuts it there and writes unsynced again.
func (j *Journal) write(b *batch) error {
	j.mu.Lock()
	err := j.failure
	j.mu.Unlock()
	if err != nil || b.staged || len(b.buf) == 0 && !b.create {
		return err
	}
	if j.file == nil || j.fileSegment != b.segment {
		if err := j.startSegment(b.segment); err != nil {
			return err
		}
	}
	b.staged = true
	if len(b.buf) == 0 {
		return nil
	}
	j.unsynced = append(j.unsynced, b.buf)
	j.dirty = true
	j.sinceSnapshot += int64(len(b.buf))
	if _, err := j.file.Write(b.buf); err != nil {
		return err
	}
	if j.opts.Policy == Always {
		if err := j.sync(); err != nil {
			return err
		}
	}
	if j.sinceSnapshot >= j.opts.SnapshotBytes {
		j.startSnapshot()
	}
	return nil
}

// startSegment closes the current segment, synced, and creates segment g.
func (j *Journal) startSegment(g uint64) error {
	if j.file != nil {
		if err := j.sync(); err != nil {
			return err
		}
		_ = j.file.Close() // synced: a failure to close loses nothing
		j.file = nil
	}
	path := filepath.Join(j.dir, segmentName(g))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	j.file, j.fileSegment, j.synced, j.syncDir = f, g, 0, true
	j.unsynced = [][]byte{[]byte(segmentMagic)}
	j.dirty = true
	if _, err := f.WriteString(segmentMagic); err != nil {
		return err
	}
	return j.sync()
}

// sync fsyncs the segment (and its directory after its creation); what was written is then
// known to be on disk.
func (j *Journal) sync() error {
	start := time.Now()
	err := j.file.Sync()
	if j.opts.ObserveSync != nil {
		j.opts.ObserveSync(time.Since(start))
	}
	if err == nil && j.syncDir {
		if err = syncDir(j.dir); err == nil {
			j.syncDir = false
		}
	}
	if err != nil {
		return err
	}
	for _, p := range j.unsynced {
		j.synced += int64(len(p))
	}
	j.unsynced, j.dirty = nil, false
	return nil
}

// syncDirty fsyncs what Interval wrote since the last fsync.
func (j *Journal) syncDirty() {
	if j.file == nil || !j.dirty || !j.stalledAt.IsZero() {
		return
	}
	if err := j.sync(); err != nil {
		j.stall(err)
	}
}

// stall records that the journal cannot write (ENOSPC, EIO): changes are refused (Writable)
// until repair succeeds; the records taken meanwhile are held back, not lost.
func (j *Journal) stall(err error) {
	j.mu.Lock()
	first := j.stalled == nil
	j.stalled = fmt.Errorf("journal in %s cannot write: %w", j.dir, err)
	j.mu.Unlock()
	if first {
		j.stalledAt = time.Now()
		j.log.Error("The journal cannot write: changes are refused until it can; retrying", "dir", j.dir, "error", err,
			"retryInterval", j.opts.RetryInterval)
	}
}

// repair tries to write again what a failure left unwritten: the segment is cut back to what was
// last synced, what was written after that is written again, then the held-back batches, and
// all is fsynced. It reports whether the journal writes again.
func (j *Journal) repair() bool {
	err := func() error {
		if j.file != nil {
			// A descriptor that failed may stay failed (EIO): the segment is opened again.
			_ = j.file.Close()
			f, err := os.OpenFile(filepath.Join(j.dir, segmentName(j.fileSegment)), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err // j.file, closed, still names the segment to open next time
			}
			j.file = f
			if err := j.file.Truncate(j.synced); err != nil {
				return err
			}
			for _, p := range j.unsynced {
				if _, err := j.file.Write(p); err != nil {
					return err
				}
			}
		}
		for _, b := range j.queue {
			if err := j.write(b); err != nil {
				return err
			}
		}
		if j.file != nil {
			return j.sync()
		}
		return nil
	}()
	if err != nil {
		j.stall(err)
		return false
	}
	j.mu.Lock()
	j.stalled = nil
	j.mu.Unlock()
	j.log.Info("The journal writes again: changes are accepted", "dir", j.dir, "after", time.Since(j.stalledAt).Round(time.Millisecond))
	j.stalledAt = time.Time{}
	for _, b := range j.queue {
		j.finish(b, nil)
	}
	j.queue = nil
	return true
}

// Writable implements memory.Writable: while the journal cannot write, changes are refused
// before they are made, so that they neither pile up in memory nor wait for the disk.
func (j *Journal) Writable() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failure != nil {
		return j.failure
	}
	return j.stalled
}

// fail records a record that could not be framed: the records already taken fail with it and
// no more are taken, since the lists served now hold a change the journal does not. The owner
// learns it from Failed.
func (j *Journal) fail(err error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failure == nil {
		j.failure = fmt.Errorf("journal in %s: %w", j.dir, err)
		j.log.Error("The journal failed: changes can no longer be recorded", "dir", j.dir, "error", err)
		close(j.failed)
	}
	return j.failure
}

// Failed is closed when a record could not be taken (see fail): the store's changes are no
// longer recorded and the server should stop, to be restarted from what is on disk. A write or
// an fsync that fails does not close it: the journal refuses changes and retries (Writable).
func (j *Journal) Failed() <-chan struct{} { return j.failed }

// startSnapshot takes a snapshot in the background, unless one is being taken.
func (j *Journal) startSnapshot() {
	if !j.snapshotting.CompareAndSwap(false, true) {
		return
	}
	j.sinceSnapshot = 0
	j.snapshots.Add(1)
	go func() {
		defer j.snapshots.Done()
		defer j.snapshotting.Store(false)
		if err := j.Snapshot(); err != nil && !errors.Is(err, errAborted) && !errors.Is(err, ErrClosed) {
			j.log.Error("Could not write a snapshot; the journal keeps growing until the next one", "dir", j.dir, "error", err)
		}
	}()
}

// Snapshot writes a snapshot of the state now and deletes the journal it replaces. Snapshots are
// taken on their own as the journal grows; calling it is only needed to force one.
func (j *Journal) Snapshot() error {
	j.snapshotMu.Lock()
	defer j.snapshotMu.Unlock()
	j.mu.Lock()
	if err := j.refusal(); err != nil {
		j.mu.Unlock()
		return err
	}
	// From here on records go to segment g: the snapshot holds everything recorded before.
	j.segment++
	g, seq := j.segment, j.seq
	// Segment g is created even if nothing is recorded before the snapshot is renamed, so that
	// the segments after a snapshot never skip a number: restore takes a gap for lost records.
	if open := j.batches[len(j.batches)-1]; len(open.buf) == 0 {
		open.segment = g
	} else {
		j.batches = append(j.batches, newBatch(g))
	}
	j.batches[len(j.batches)-1].create = true
	j.mu.Unlock()

	start := time.Now()
	path := filepath.Join(j.dir, snapshotName(g))
	tmp := path + ".tmp"
	if err := writeSnapshot(tmp, j.state, seq, j.stop); err != nil {
		os.Remove(tmp)
		return err
	}
	// The lists were copied while records went on; if one of those records fails, the copy holds
	// a change that was refused to its client. Batches are written in order: once the last one
	// is, any failure is known.
	j.mu.Lock()
	last := j.batches[len(j.batches)-1]
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default:
	}
	select {
	case <-last.done:
	case <-j.stopped: // closed: the final flush may not have taken last
	}
	j.mu.Lock()
	err := j.refusal()
	j.mu.Unlock()
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncDir(j.dir); err != nil {
		return err
	}
	segments, snapshots, _, err := j.files()
	if err != nil {
		return err
	}
	for _, s := range segments {
		if s < g {
			os.Remove(filepath.Join(j.dir, segmentName(s)))
		}
	}
	for _, s := range snapshots {
		if s < g {
			os.Remove(filepath.Join(j.dir, snapshotName(s)))
		}
	}
	if err := syncDir(j.dir); err != nil {
		return err
	}
	j.log.Info("Wrote snapshot", "path", path, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// Size is the bytes of journal segments and snapshots in the directory.
func (j *Journal) Size() int64 {
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return 0
	}
	var size int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") || strings.HasSuffix(e.Name(), ".snap") {
			if info, err := e.Info(); err == nil {
				size += info.Size()
			}
		}
	}
	return size
}

// Close writes and fsyncs every record taken, refuses later ones with ErrClosed, abandons a
// snapshot being written, and releases the directory.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	j.closed = true
	j.mu.Unlock()
	close(j.stop)
	<-j.stopped
	j.snapshots.Wait()
	var err error
	if j.file != nil {
		err = j.file.Close()
	}
	if j.failure != nil {
		err = j.failure
	} else if j.stalled != nil {
		err = j.stalled // the records held back were refused: the restart will not have them
	}
	return errors.Join(err, j.lock.Close())
}
