package memory

import (
	"iter"
	"slices"
)

// chunkList is an ordered sequence of lines cut into chunks. Lines enter only at the two ends and
// leave from anywhere. The first and the last chunk stay out of the Fenwick tree, so reads and
// adds at the ends never touch it; removals from inner chunks update it in O(log chunks), and the
// rarer creation or removal of a whole chunk rebuilds it.
type chunkList struct {
	chunks []*chunk
	inner  fenwick // lengths of chunks[1 : len(chunks)-1]
	n      int     // lines in all chunks
}

// newChunkList takes ownership of lines and cuts it into chunks of nearly equal length without
// copying anything.
func newChunkList(lines []string) chunkList {
	count := (len(lines) + chunkCap - 1) / chunkCap
	l := chunkList{chunks: make([]*chunk, count), n: len(lines)}
	for k := range count {
		lo, hi := k*len(lines)/count, (k+1)*len(lines)/count
		l.chunks[k] = &chunk{buf: lines[lo:hi:hi], hi: hi - lo, n: hi - lo}
		l.chunks[k].setLiveRange(0, hi-lo)
	}
	l.reindex()
	return l
}

func (l *chunkList) len() int { return l.n }

// all yields the lines front to back.
func (l *chunkList) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, c := range l.chunks {
			for line := range c.all() {
				if !yield(line) {
					return
				}
			}
		}
	}
}

// from yields the lines from the i-th on, front to back.
func (l *chunkList) from(i int) iter.Seq[string] {
	return func(yield func(string) bool) {
		if i >= l.n {
			return
		}
		k, offset := l.locate(i)
		c := l.chunks[k]
		for s := c.slot(offset); s < c.hi; s++ {
			if c.isLive(s) && !yield(c.buf[s]) {
				return
			}
		}
		for _, c := range l.chunks[k+1:] {
			for line := range c.all() {
				if !yield(line) {
					return
				}
			}
		}
	}
}

func (l *chunkList) pushFront(line string) {
	if len(l.chunks) == 0 || !l.chunks[0].pushFront(line) {
		c := &chunk{}
		c.pushFront(line)
		l.chunks = slices.Insert(l.chunks, 0, c)
		l.reindex()
	}
	l.n++
}

func (l *chunkList) pushBack(line string) {
	if len(l.chunks) == 0 || !l.chunks[len(l.chunks)-1].pushBack(line) {
		c := &chunk{}
		c.pushBack(line)
		l.chunks = append(l.chunks, c)
		l.reindex()
	}
	l.n++
}

// removeAt removes and returns the i-th line (0 <= i < len).
func (l *chunkList) removeAt(i int) string {
	k, offset := l.locate(i)
	c := l.chunks[k]
	line := c.remove(offset)
	l.n--
	if 0 < k && k < len(l.chunks)-1 {
		l.inner.add(k, -1)
	}
	if 4*c.len() < len(c.buf) {
		l.compact(k)
	}
	return line
}

// locate returns the chunk holding the i-th line and the line's offset in it.
func (l *chunkList) locate(i int) (k, offset int) {
	first := l.chunks[0].len()
	if i < first {
		return 0, i
	}
	i -= first
	last := len(l.chunks) - 1
	if inner := l.n - first - l.chunks[last].len(); i >= inner {
		return last, i - inner
	}
	return l.inner.find(i)
}

// compact gives memory back from chunk k, which uses under a quarter of its buffer, so that
// removals anywhere (a random drain) leave nothing behind: an empty chunk goes, a sparse one
// merges with a small neighbour or else moves to a buffer twice its length. Each step needs the
// chunk to lose half its lines again before the next, which keeps the cost amortised O(1).
func (l *chunkList) compact(k int) {
	c := l.chunks[k]
	if c.len() == 0 {
		l.chunks = slices.Delete(l.chunks, k, k+1)
		if len(l.chunks) == 0 {
			*l = chunkList{}
			return
		}
		l.reindex()
		return
	}
	if j := l.smallerNeighbour(k); j >= 0 && c.len()+l.chunks[j].len() <= chunkCap/2 {
		l.merge(min(j, k))
		return
	}
	if size := max(2*c.len(), minChunkBuf); size < len(c.buf) {
		c.resize(size, k == 0) // the first chunk grows at the front
	}
}

// smallerNeighbour returns the index of the shorter chunk next to chunk k, or -1 if it has none.
func (l *chunkList) smallerNeighbour(k int) int {
	j := -1
	for _, nb := range [2]int{k - 1, k + 1} {
		if 0 <= nb && nb < len(l.chunks) && (j < 0 || l.chunks[nb].len() < l.chunks[j].len()) {
			j = nb
		}
	}
	return j
}

// merge moves the lines of chunk k+1 to the end of chunk k and drops chunk k+1.
func (l *chunkList) merge(k int) {
	a, b := l.chunks[k], l.chunks[k+1]
	a.resize(max(2*(a.len()+b.len()), minChunkBuf), false)
	a.takeAll(b)
	l.chunks = slices.Delete(l.chunks, k+1, k+2)
	l.reindex()
}

// reindex rebuilds the Fenwick tree after chunks were added or removed.
func (l *chunkList) reindex() {
	l.inner.rebuild(max(len(l.chunks)-1, 0), func(k int) int { return l.chunks[k].len() })
}
