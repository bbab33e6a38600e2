package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// Memory is the in-memory Store. The map of lists has its own lock, held only to look a list up
// or create it; each list has its own lock, so operations on different lists never wait for each
// other. Reads and adds at either end cost O(1) (amortised), a random read O(log n), a Find its
// scan plus O(log n) for the hit, and a unique add O(1). Create one with NewMemory.
type Memory struct {
	mu    sync.RWMutex
	lists map[string]*list
	intN  func(n int) int // picks Random indexes; tests put a seeded source here
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{lists: map[string]*list{}, intN: rand.IntN}
}

// lookup returns the list called name, or nil.
func (m *Memory) lookup(name string) *list {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.lists[name]
}

// lookupOrCreate returns the list called name, creating an empty one if needed.
func (m *Memory) lookupOrCreate(name string) *list {
	if l := m.lookup(name); l != nil {
		return l
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.lists[name]
	if l == nil {
		l = &list{}
		m.lists[name] = l
	}
	return l
}

// Length implements Store.
func (m *Memory) Length(name string) (int, error) {
	l := m.lookup(name)
	if l == nil {
		return 0, ErrNotLoaded
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines.len(), nil
}

// Read implements Store.
func (m *Memory) Read(name string, pos Position, n int, keep bool) ([]string, error) {
	l := m.lookup(name)
	if l == nil {
		return nil, ErrNotLoaded
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch size := l.lines.len(); {
	case size == 0:
		return nil, ErrEmpty
	case pos != First && pos != Last && pos != Random:
		return nil, fmt.Errorf("store: unknown read position %d", pos)
	case n < 1:
		return nil, fmt.Errorf("store: cannot read %d lines", n)
	case n > size:
		return nil, &ShortListError{Want: n, Have: size}
	}
	picked := make([]string, n)
	for i := range picked {
		picked[i] = l.remove(m.index(pos, l.lines.len()))
	}
	if keep {
		for _, line := range picked {
			l.insert(line, Last)
		}
	}
	return picked, nil
}

// index picks the index a read at pos takes from a list of size lines.
func (m *Memory) index(pos Position, size int) int {
	switch pos {
	case First:
		return 0
	case Last:
		return size - 1
	default:
		return m.intN(size)
	}
}

// Add implements Store.
func (m *Memory) Add(name, line string, pos Position, unique bool) error {
	l := m.lookupOrCreate(name)
	if pos != First && pos != Last {
		return fmt.Errorf("store: cannot add at position %d, only First or Last", pos)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if unique && l.contains(line) {
		return ErrDuplicate
	}
	l.insert(line, pos)
	return nil
}

// Ensure implements Store.
func (m *Memory) Ensure(name string) {
	m.lookupOrCreate(name)
}

// Find implements Store.
func (m *Memory) Find(name string, match func(line string) (bool, error), keep bool) (string, error) {
	l := m.lookup(name)
	if l == nil {
		return "", ErrNotLoaded
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines.len() == 0 {
		return "", ErrEmpty
	}
	hit := 0
	for line := range l.lines.all() {
		ok, err := match(line)
		if err != nil {
			return "", err
		}
		if ok {
			break
		}
		hit++
	}
	if hit == l.lines.len() {
		return "", ErrNoMatch
	}
	line := l.remove(hit)
	if keep {
		l.insert(line, Last)
	}
	return line, nil
}

// Replace implements Store.
func (m *Memory) Replace(name string, lines []string) {
	l := m.lookupOrCreate(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replace(lines)
}

// Lines implements Store.
func (m *Memory) Lines(name string) ([]string, error) {
	l := m.lookup(name)
	if l == nil {
		return nil, ErrNotLoaded
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.AppendSeq(make([]string, 0, l.lines.len()), l.lines.all()), nil
}

// Reset implements Store.
func (m *Memory) Reset(name string) bool {
	l := m.lookup(name)
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replace(nil)
	return true
}

// Lengths implements Store. The map lock is let go before the list locks are taken, one at a
// time, so a slow Find on one list never holds up the creation of another; the lengths are
// therefore not one instant's snapshot of every list.
func (m *Memory) Lengths() []ListLength {
	type namedList struct {
		name string
		l    *list
	}
	m.mu.RLock()
	all := make([]namedList, 0, len(m.lists))
	for name, l := range m.lists {
		all = append(all, namedList{name, l})
	}
	m.mu.RUnlock()

	slices.SortFunc(all, func(a, b namedList) int { return strings.Compare(a.name, b.name) })
	lengths := make([]ListLength, len(all))
	for i, nl := range all {
		nl.l.mu.Lock()
		lengths[i] = ListLength{Name: nl.name, Length: nl.l.lines.len()}
		nl.l.mu.Unlock()
	}
	return lengths
}
