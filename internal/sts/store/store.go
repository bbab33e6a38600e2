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
package store

import (
	"errors"
	"fmt"
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
// is atomic with respect to the list it touches.
type Store interface {
	// Length reports how many lines the list holds; ErrNotLoaded if there is no such list.
	Length(name string) (int, error)

	// Read picks n lines one after the other, each against the list as the previous picks left it
	// (First = index 0, Last = the last index, Random = uniform), and removes them. With keep, the
	// picked lines are then appended to the end in pick order, so First+keep rotates the list and
	// Last+keep returns the same line forever.
	// Errors, in this order: ErrNotLoaded, ErrEmpty, *ShortListError.
	Read(name string, pos Position, n int, keep bool) ([]string, error)

	// Add inserts line at the front (First) or the end (Last), creating the list if it is new,
	// even when the Add then fails. With unique, a line equal to one already in the list is
	// refused with ErrDuplicate.
	Add(name, line string, pos Position, unique bool) error

	// Ensure creates an empty list if there is none with this name.
	Ensure(name string)

	// Find scans the list front to back, removes the first line that match accepts and returns it;
	// with keep the line is appended to the end. An error from match stops the scan and is
	// returned with the list unchanged. Other errors: ErrNotLoaded, ErrEmpty, ErrNoMatch.
	// match runs under the list's lock.
	Find(name string, match func(line string) (bool, error), keep bool) (string, error)

	// Replace creates the list or replaces its content with lines. The store may keep the slice:
	// the caller hands over ownership and must not use it afterwards.
	Replace(name string, lines []string)

	// Lines returns a copy of the list's lines in order; ErrNotLoaded if there is no such list.
	Lines(name string) ([]string, error)

	// Reset empties the list and reports whether it existed. It never creates a list.
	Reset(name string) bool

	// Lengths reports every list, empty ones included, sorted by name in byte order.
	Lengths() []ListLength
}
