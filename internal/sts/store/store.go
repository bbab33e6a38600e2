// Package store is the table server's list engine: named, ordered lists of lines with the
// original STS semantics (READ and FIND with KEEP move a line to the end, keys are never deleted).
//
// Store is the contract the HTTP layer codes against; Memory is the in-memory implementation.
//
// Inside Memory, a list (list.go) is a chunkList (chunklist.go): its lines cut into chunks of at
// most 1024 (chunk.go). Lines enter only at the two ends; a removal inside a chunk leaves a hole
// marked in the chunk's bitmap, and sparse chunks are packed or merged so that memory follows the
// line count. A Fenwick tree over the chunk lengths (fenwick.go) finds the i-th line in
// O(log n), which is what RANDOM reads and FIND hits need. Unique adds look lines up in a map of
// line counts that a list builds on its first unique add.
//
// Two more concerns hook into the same place, the list primitives of list.go, through which every
// change goes: a Recorder (the journal, change.go) gets one record per operation before the
// operation returns, and reads that wait for lines (wait.go) are served when lines arrive.
// Limits (limits.go) are checked before a list grows.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Position says where in a list an operation reads or adds a line.
type Position int

const (
	// First is the front of the list (index 0).
	First Position = iota
	// Last is the end of the list.
	Last
	// Random is a uniformly chosen line; only reads accept it.
	Random
)

var (
	// ErrNotLoaded means no list has this name.
	ErrNotLoaded = errors.New("store: list not loaded")
	// ErrEmpty means the list exists but holds no line.
	ErrEmpty = errors.New("store: list is empty")
	// ErrDuplicate means a unique Add found an equal line already in the list.
	ErrDuplicate = errors.New("store: line already in the list")
	// ErrNoMatch means Find scanned the whole list without a hit.
	ErrNoMatch = errors.New("store: no line matches")
	// ErrNotRecorded means the change was made in memory but its record could not be made
	// durable (the journal failed or is closed): it is not acknowledged, and a restart may or
	// may not show it. The error wraps the recorder's.
	ErrNotRecorded = errors.New("store: the change could not be recorded")
)

// ShortListError is returned by Read when it is asked for more lines than the list holds.
type ShortListError struct {
	Want int // lines asked for
	Have int // lines in the list
}

func (e *ShortListError) Error() string {
	return fmt.Sprintf("store: %d lines asked for, the list has %d", e.Want, e.Have)
}

// ListLength is one entry of Lengths.
type ListLength struct {
	Name   string
	Length int
}

// Store holds named lists of lines. Every method is safe for concurrent use, and each operation
// is atomic with respect to the list it touches. A change returns only once its record is durable
// when the store records changes (see Recorder); otherwise ErrNotRecorded.
type Store interface {
	// Length reports how many lines the list holds; ErrNotLoaded if there is no such list.
	Length(name string) (int, error)

	// Read picks n lines one after the other, each against the list as the previous picks left it
	// (First = index 0, Last = the last index, Random = uniform), and removes them. With keep, the
	// picked lines are then appended to the end in pick order, so First+keep rotates the list and
	// Last+keep returns the same line forever.
	// Errors, in this order: ErrNotLoaded, ErrEmpty, *ShortListError.
	//
	// With a positive wait, a read that would fail with one of these errors waits up to wait for
	// the lines to arrive instead (waiting reads are served in arrival order, see wait.go); it
	// returns the error it meets when the wait ends, or ctx's error if ctx ends first.
	Read(ctx context.Context, name string, pos Position, n int, keep bool, wait time.Duration) ([]string, error)

	// Find scans the list front to back, removes the first line that match accepts and returns it;
	// with keep the line is appended to the end. An error from match stops the scan and is
	// returned with the list unchanged. Other errors: ErrNotLoaded, ErrEmpty, ErrNoMatch, after
	// which a positive wait waits for a matching line as Read does. match runs under the list's
	// lock.
	Find(ctx context.Context, name string, match func(line string) (bool, error), keep bool, wait time.Duration) (string, error)

	// Add inserts line at the front (First) or the end (Last), creating the list if it is new,
	// even when the Add then fails. With unique, a line equal to one already in the list is
	// refused with ErrDuplicate. A line over a limit is refused with a *LimitError.
	Add(name, line string, pos Position, unique bool) error

	// Insert adds lines at the front (First) or the end (Last) in one atomic step, keeping their
	// order, creating the list if it is new. It fails with a *LimitError, and then changes
	// nothing, when one line or the result would exceed a limit.
	Insert(name string, lines []string, pos Position) error

	// Ensure creates an empty list if there is none with this name.
	Ensure(name string) error

	// Replace creates the list or replaces its content with lines. The store may keep the slice:
	// the caller hands over ownership and must not use it afterwards. Over a limit it fails with
	// a *LimitError and changes nothing.
	Replace(name string, lines []string) error

	// Lines returns a copy of the list's lines in order; ErrNotLoaded if there is no such list.
	Lines(name string) ([]string, error)

	// Reset empties the list and reports whether it existed. It never creates a list.
	Reset(name string) (bool, error)

	// Lengths reports every list, empty ones included, sorted by name in byte order.
	Lengths() []ListLength

	// Bytes is the size of all the lines held, the figure that Limits.MaxTotalBytes bounds.
	Bytes() int64

	// Waiting is the number of reads waiting for lines.
	Waiting() int

	// EndWaits ends every wait: waiting reads answer as if their wait were over, and later
	// reads do not wait. A server calls it when it stops.
	EndWaits()
}
