package memory

import (
	"iter"
	"math/bits"
)

const (
	// chunkCap is the most lines a chunk holds: 16 KiB of string headers, so that compacting a
	// chunk stays cheap and a million lines make only about a thousand chunks.
	chunkCap = 1024
	// minChunkBuf is the smallest buffer a chunk allocates, so that a small list stays small.
	minChunkBuf = 8
)

// chunk is a run of consecutive lines kept in buf[lo:hi], in order. Removing a line from the
// middle leaves a hole instead of shifting the lines after it: on a large list, moving hundreds of
// cold string headers costs far more than finding a line through the live bitmap. Holes go when
// the chunk is rearranged (makeRoom, resize). Every slot that holds no line is "", so the bytes of
// a removed line never stay reachable from here.
type chunk struct {
	buf    []string
	lo, hi int                   // when n > 0, buf[lo] and buf[hi-1] hold lines
	n      int                   // lines held
	live   [chunkCap / 64]uint64 // bit s is set when buf[s] holds a line
}

func (c *chunk) len() int { return c.n }

func (c *chunk) isLive(s int) bool { return c.live[s/64]&(1<<(s%64)) != 0 }

func (c *chunk) setLive(s int, live bool) {
	if live {
		c.live[s/64] |= 1 << (s % 64)
	} else {
		c.live[s/64] &^= 1 << (s % 64)
	}
}

// setLiveRange marks the slots from lo to hi-1 as holding lines, a word at a time.
func (c *chunk) setLiveRange(lo, hi int) {
	for s := lo; s < hi; {
		bit := s % 64
		k := min(64-bit, hi-s)
		c.live[s/64] |= (uint64(1)<<k - 1) << bit
		s += k
	}
}

// all yields the lines in order.
func (c *chunk) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		for s := c.lo; s < c.hi; s++ {
			if c.isLive(s) && !yield(c.buf[s]) {
				return
			}
		}
	}
}

// slot returns the index in buf of line i (0 <= i < n). With holes it counts live bits from
// the nearer end, a word at a time.
func (c *chunk) slot(i int) int {
	switch {
	case i == 0:
		return c.lo
	case i == c.n-1:
		return c.hi - 1
	case c.n == c.hi-c.lo: // no holes
		return c.lo + i
	case i < c.n/2:
		for w := c.lo / 64; ; w++ { // bits below lo are all clear
			if ones := bits.OnesCount64(c.live[w]); i >= ones {
				i -= ones
				continue
			}
			return w*64 + nthSetBit(c.live[w], i)
		}
	default:
		i = c.n - 1 - i
		for w := (c.hi - 1) / 64; ; w-- { // bits from hi on are all clear
			if ones := bits.OnesCount64(c.live[w]); i >= ones {
				i -= ones
				continue
			}
			return w*64 + 63 - nthSetBit(bits.Reverse64(c.live[w]), i)
		}
	}
}

// nthSetBit returns the position of the i-th lowest set bit of word (i < the number of set bits).
func nthSetBit(word uint64, i int) int {
	for ; i > 0; i-- {
		word &= word - 1 // clear the lowest set bit
	}
	return bits.TrailingZeros64(word)
}

// remove takes out line i and returns it.
func (c *chunk) remove(i int) string {
	s := c.slot(i)
	line := c.buf[s]
	c.buf[s] = ""
	c.setLive(s, false)
	c.n--
	switch {
	case c.n == 0:
		c.lo, c.hi = s, s
	case s == c.lo:
		c.lo = c.nextLive(s)
	case s == c.hi-1:
		c.hi = c.prevLive(s) + 1
	}
	return line
}

// nextLive returns the first slot after s holding a line; there must be one.
func (c *chunk) nextLive(s int) int {
	s++
	w := s / 64
	word := c.live[w] >> (s % 64) << (s % 64) // only the bits from s on
	for word == 0 {
		w++
		word = c.live[w]
	}
	return w*64 + bits.TrailingZeros64(word)
}

// prevLive returns the last slot before s holding a line; there must be one.
func (c *chunk) prevLive(s int) int {
	s--
	w := s / 64
	word := c.live[w] << (63 - s%64) >> (63 - s%64) // only the bits up to s
	for word == 0 {
		w--
		word = c.live[w]
	}
	return w*64 + 63 - bits.LeadingZeros64(word)
}

// pushFront adds a line at the front; it reports false when the chunk is full.
func (c *chunk) pushFront(line string) bool {
	if c.lo == 0 && !c.makeRoom(true) {
		return false
	}
	c.lo--
	c.buf[c.lo] = line
	c.setLive(c.lo, true)
	c.n++
	return true
}

// pushBack adds a line at the back; it reports false when the chunk is full.
func (c *chunk) pushBack(line string) bool {
	if c.hi == len(c.buf) && !c.makeRoom(false) {
		return false
	}
	c.buf[c.hi] = line
	c.setLive(c.hi, true)
	c.hi++
	c.n++
	return true
}

// makeRoom frees slots at the front or the back. A buffer at most half used is rearranged in
// place, so that a rotating list never allocates; a fuller one doubles up to chunkCap. It reports
// false when a chunkCap buffer is more than half used: time for a new chunk.
func (c *chunk) makeRoom(atFront bool) bool {
	size := len(c.buf)
	if size == 0 || 2*c.n > size {
		if size >= chunkCap {
			return false
		}
		size = min(max(2*size, minChunkBuf), chunkCap)
	}
	c.resize(size, atFront)
	return true
}

// resize packs the lines, holes closed, into a buffer of the given size (the same buffer if the
// size does not change) with the free slots at the front or at the back. It clears every slot the
// lines left: the old buffer may be part of a Replace slice that other chunks keep alive.
func (c *chunk) resize(size int, freeAtFront bool) {
	buf := c.buf
	if size != len(buf) {
		buf = make([]string, size)
	}
	// Packing towards the end walks backwards and towards the start forwards, so that in place
	// no line is overwritten before it has moved.
	lo := 0
	if freeAtFront {
		lo = size - c.n
		d := size
		for s := c.hi - 1; s >= c.lo; s-- {
			if c.isLive(s) {
				d--
				buf[d] = c.buf[s]
			}
		}
	} else {
		d := 0
		for s := c.lo; s < c.hi; s++ {
			if c.isLive(s) {
				buf[d] = c.buf[s]
				d++
			}
		}
	}
	if size == len(c.buf) {
		clear(buf[:lo])
		clear(buf[lo+c.n:])
	} else {
		clear(c.buf[c.lo:c.hi])
	}
	c.buf, c.lo, c.hi = buf, lo, lo+c.n
	c.live = [chunkCap / 64]uint64{}
	c.setLiveRange(c.lo, c.hi)
}

// takeAll moves every line of next to the back of c, which must have room for them.
func (c *chunk) takeAll(next *chunk) {
	for line := range next.all() {
		c.buf[c.hi] = line
		c.setLive(c.hi, true)
		c.hi++
		c.n++
	}
	clear(next.buf[next.lo:next.hi])
}
