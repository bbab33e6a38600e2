package memory

import (
	"math/bits"
	"slices"
)

// fenwick is a Fenwick (binary indexed) tree over chunk lengths: it answers "which chunk holds
// the i-th line" and absorbs a length change in O(log chunks). Tree position k stands for chunk k
// of the chunkList; position 0 is unused, which is why the first chunk is never in the tree.
type fenwick []int

// rebuild makes the tree hold positions 1..count-1 with the given lengths, reusing its memory.
func (f *fenwick) rebuild(count int, length func(k int) int) {
	t := slices.Grow((*f)[:0], count)[:count]
	clear(t)
	for k := 1; k < count; k++ {
		t[k] += length(k)
		if parent := k + k&-k; parent < count {
			t[parent] += t[k]
		}
	}
	*f = t
}

// add changes the length at position k by delta.
func (f fenwick) add(k, delta int) {
	for ; k < len(f); k += k & -k {
		f[k] += delta
	}
}

// find returns the position holding the i-th line (counting from 0 at position 1) and the line's
// offset within that position. i must be less than the sum of all lengths.
func (f fenwick) find(i int) (k, offset int) {
	for step := 1 << (bits.Len(uint(len(f)-1)) - 1); step > 0; step >>= 1 {
		if next := k + step; next < len(f) && f[next] <= i {
			k = next
			i -= f[next]
		}
	}
	return k + 1, i
}
