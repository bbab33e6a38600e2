package store

import "sync"

// list is one named list. Every change to its lines goes through insert, remove and replace under
// mu: the one place where a journal or blocked readers can hook in.
type list struct {
	mu    sync.Mutex
	lines chunkList
	// counts says how many times each line occurs, for unique adds. It stays nil until the first
	// unique add, so lists never used that way pay nothing for it, and is dropped when the list
	// is emptied or replaced, which also gives back the memory of a map that never shrinks.
	counts map[string]int
}

func (l *list) insert(line string, pos Position) {
	if pos == First {
		l.lines.pushFront(line)
	} else {
		l.lines.pushBack(line)
	}
	if l.counts != nil {
		l.counts[line]++
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
	return line
}

// replace takes ownership of lines as the list's new content.
func (l *list) replace(lines []string) {
	l.lines = newChunkList(lines)
	l.counts = nil
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
