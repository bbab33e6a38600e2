package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

func testRead(t *testing.T, newStore Factory) {
	tests := map[string]struct {
		lines   []string // nil: no list
		pos     store.Position
		n       int
		keep    bool
		want    []string
		wantErr error
		after   []string
	}{
		"FIRST with KEEP rotates": {lines: months, pos: store.First, n: 1, keep: true,
			want: []string{"Jan"}, after: []string{"Feb", "Mar", "Apr", "May", "June", "Jan"}},
		"FIRST without KEEP removes": {lines: months, pos: store.First, n: 1,
			want: []string{"Jan"}, after: months[1:]},
		"LAST with KEEP changes nothing": {lines: months, pos: store.Last, n: 1, keep: true,
			want: []string{"June"}, after: months},
		"LAST without KEEP removes": {lines: months, pos: store.Last, n: 1,
			want: []string{"June"}, after: months[:5]},
		"READMULTI FIRST with KEEP": {lines: months, pos: store.First, n: 2, keep: true,
			want: []string{"Jan", "Feb"}, after: []string{"Mar", "Apr", "May", "June", "Jan", "Feb"}},
		"READMULTI LAST with KEEP reverses the tail": {lines: months, pos: store.Last, n: 2, keep: true,
			want: []string{"June", "May"}, after: []string{"Jan", "Feb", "Mar", "Apr", "June", "May"}},
		"READMULTI LAST returns lines last first": {lines: months, pos: store.Last, n: 3,
			want: []string{"June", "May", "Apr"}, after: months[:3]},
		"READMULTI the whole list": {lines: months, pos: store.First, n: 6,
			want: months, after: []string{}},
		"an empty line is a line": {lines: []string{"", "a"}, pos: store.First, n: 1,
			want: []string{""}, after: []string{"a"}},
		"unknown list": {pos: store.First, n: 1, wantErr: store.ErrNotLoaded},
		"empty list":   {lines: []string{}, pos: store.First, n: 1, wantErr: store.ErrEmpty, after: []string{}},
		"an empty list is checked before the count": {lines: []string{}, pos: store.Last, n: 5, wantErr: store.ErrEmpty, after: []string{}},
		"RANDOM on an empty list":                   {lines: []string{}, pos: store.Random, n: 1, wantErr: store.ErrEmpty, after: []string{}},
		"more lines than the list holds": {lines: months, pos: store.First, n: 7,
			wantErr: &store.ShortListError{Want: 7, Have: 6}, after: months},
		"RANDOM, more lines than the list holds": {lines: months, pos: store.Random, n: 7, keep: true,
			wantErr: &store.ShortListError{Want: 7, Have: 6}, after: months},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, store.Limits{})
			fill(t, s, "l", tc.lines)
			got, err := s.Read(t.Context(), "l", tc.pos, tc.n, tc.keep, 0)
			checkErr(t, err, tc.wantErr)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Read = %q, want %q", got, tc.want)
			}
			if tc.lines != nil {
				checkLines(t, s, "l", tc.after)
			} else {
				checkNotLoaded(t, s, "l")
			}
		})
	}
}

// testReadRandom checks what any draw of a RANDOM read must give: distinct lines of the list,
// removed from it with the others left in order, and with KEEP appended in pick order.
func testReadRandom(t *testing.T, newStore Factory) {
	for _, n := range []int{1, 3, len(months)} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d lines, KEEP %t", n, keep), func(t *testing.T) {
				s := newStore(t, store.Limits{})
				fill(t, s, "l", months)
				got, err := s.Read(t.Context(), "l", store.Random, n, keep, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkPicks(t, months, got, n)
				after := slices.DeleteFunc(slices.Clone(months), func(line string) bool { return slices.Contains(got, line) })
				if keep {
					after = append(after, got...)
				}
				checkLines(t, s, "l", after)
			})
		}
	}
}

// checkPicks fails unless picked is n distinct lines of lines, which are distinct.
func checkPicks(t testing.TB, lines, picked []string, n int) {
	t.Helper()
	sorted := slices.Sorted(slices.Values(picked))
	if len(picked) != n || len(slices.Compact(sorted)) != n {
		t.Fatalf("picked %q, want %d distinct lines", picked, n)
	}
	for _, line := range picked {
		if !slices.Contains(lines, line) {
			t.Fatalf("picked %q, which the list does not hold", line)
		}
	}
}

func testReadRefusesBadArguments(t *testing.T, newStore Factory) {
	tests := map[string]struct {
		pos store.Position
		n   int
	}{
		"zero lines":       {store.First, 0},
		"negative count":   {store.Last, -1},
		"unknown position": {store.Position(7), 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, store.Limits{})
			fill(t, s, "l", months)
			if got, err := s.Read(t.Context(), "l", tc.pos, tc.n, false, 0); err == nil {
				t.Fatalf("Read = %q, want an error", got)
			}
			checkLines(t, s, "l", months)
		})
	}
}

func testReadLastKeepReturnsTheSameLineForever(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	for range 5 {
		got, err := s.Read(t.Context(), "l", store.Last, 1, true, 0)
		if err != nil || !slices.Equal(got, []string{"June"}) {
			t.Fatalf("Read = %q, %v; want [June]", got, err)
		}
	}
	checkLines(t, s, "l", months)
}

// testReadFirstKeepRotatesALongList rotates a list long enough to cross the blocks that a backend
// may keep its lines in (the memory backend's chunks hold 1024) twice over.
func testReadFirstKeepRotatesALongList(t *testing.T, newStore Factory) {
	lines := numbered(3*1024 + 17)
	s := newStore(t, store.Limits{})
	fill(t, s, "l", lines)
	for i := range 2 * len(lines) {
		got, err := s.Read(t.Context(), "l", store.First, 1, true, 0)
		if err != nil || got[0] != lines[i%len(lines)] {
			t.Fatalf("read %d = %q, %v; want %q", i, got, err, lines[i%len(lines)])
		}
	}
	checkLines(t, s, "l", lines)
}

func testRandomReadOfTheWholeListIsAShuffle(t *testing.T, newStore Factory) {
	lines := numbered(5000)
	s := newStore(t, store.Limits{})
	fill(t, s, "l", lines)
	got, err := s.Read(t.Context(), "l", store.Random, len(lines), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A correct shuffle is the list's own order once in 5000! draws.
	if slices.Equal(got, lines) {
		t.Fatal("RANDOM read the lines in list order")
	}
	checkPicks(t, lines, got, len(lines))
	checkLines(t, s, "l", []string{})
}

// chiSquareBound is the bound of the uniformity tests' chi-square statistics. A uniform source
// passes it but with a probability below 1e-9 for up to 11 degrees of freedom (1.5e-12 at 7, 1.2e-10
// at 11), and a gross bias, such as an index never drawn, goes far over it with the draws made.
const chiSquareBound = 70

// checkUniform fails if counts, the draws of equally likely outcomes, are not plausibly uniform.
func checkUniform(t testing.TB, what string, counts []int) {
	t.Helper()
	total := 0
	for _, c := range counts {
		total += c
	}
	expected := float64(total) / float64(len(counts))
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - expected
		chi2 += d * d / expected
	}
	if chi2 > chiSquareBound {
		t.Errorf("%s: counts %v over %d draws are not uniform (chi-square %.1f > %d)", what, counts, total, chi2, chiSquareBound)
	}
}

// testRandomReadsAreUniform counts the index that each RANDOM read with KEEP took, following the
// list's order as the reads change it, so that a bias towards a position shows whatever line
// happens to stand there.
func testRandomReadsAreUniform(t *testing.T, newStore Factory) {
	const draws = 4000
	order := numbered(8)
	s := newStore(t, store.Limits{})
	fill(t, s, "l", order)
	counts := make([]int, len(order))
	for range draws {
		got, err := s.Read(t.Context(), "l", store.Random, 1, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(order, got[0])
		if i < 0 {
			t.Fatalf("read %q, which the list does not hold", got[0])
		}
		counts[i]++
		order = append(slices.Delete(order, i, i+1), got[0])
	}
	checkUniform(t, "indexes of RANDOM reads", counts)
	checkLines(t, s, "l", order)
}

// testRandomReadMultiPicksOneAfterTheOther checks that a RANDOM READMULTI of two lines out of four
// picks the first uniformly, then the second uniformly among the three left: each of the 12
// ordered picks is equally likely (a backend that drew a set and returned it in list order would
// give only 6).
func testRandomReadMultiPicksOneAfterTheOther(t *testing.T, newStore Factory) {
	const draws = 2400
	order := numbered(4)
	s := newStore(t, store.Limits{})
	fill(t, s, "l", order)
	counts := make([]int, 4*3)
	for range draws {
		got, err := s.Read(t.Context(), "l", store.Random, 2, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkPicks(t, order, got, 2)
		first := slices.Index(order, got[0])
		order = slices.Delete(order, first, first+1)
		second := slices.Index(order, got[1])
		order = append(slices.Delete(order, second, second+1), got...)
		counts[3*first+second]++
	}
	checkUniform(t, "ordered picks of RANDOM READMULTI", counts)
	checkLines(t, s, "l", order)
}

// contains is a Find match for the lines that contain sub.
func contains(sub string) store.Matcher {
	return func(line string) (bool, error) { return strings.Contains(line, sub), nil }
}

func testFind(t *testing.T, newStore Factory) {
	errRegex := errors.New("regex timeout")
	tests := map[string]struct {
		lines   []string // nil: no list
		match   store.Matcher
		keep    bool
		want    string
		wantErr error
		seen    int // how many lines match saw, from the front
		after   []string
	}{
		"the first hit wins and KEEP moves it to the end": {lines: []string{"a1", "b", "a2"}, match: contains("a"), keep: true,
			want: "a1", seen: 1, after: []string{"b", "a2", "a1"}},
		"without KEEP the hit is removed": {lines: []string{"b", "a1", "a2"}, match: contains("a"),
			want: "a1", seen: 2, after: []string{"b", "a2"}},
		"a hit on the last line": {lines: []string{"a", "b", "c"}, match: contains("c"), keep: true,
			want: "c", seen: 3, after: []string{"a", "b", "c"}},
		"an empty line can be found": {lines: []string{"a", "", "b"}, match: func(line string) (bool, error) { return line == "", nil },
			want: "", seen: 2, after: []string{"a", "b"}},
		"no hit leaves the list unchanged": {lines: []string{"a", "b"}, match: contains("z"), keep: true,
			wantErr: store.ErrNoMatch, seen: 2, after: []string{"a", "b"}},
		"an error from match stops the scan": {lines: []string{"a", "b", "c"},
			match: func(line string) (bool, error) {
				if line == "b" {
					return false, errRegex
				}
				return line == "c", nil
			},
			wantErr: errRegex, seen: 2, after: []string{"a", "b", "c"}},
		"empty list":   {lines: []string{}, match: contains(""), wantErr: store.ErrEmpty, after: []string{}},
		"unknown list": {match: contains(""), wantErr: store.ErrNotLoaded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, store.Limits{})
			fill(t, s, "l", tc.lines)
			var seen []string
			got, err := s.Find(t.Context(), "l", func(line string) (bool, error) {
				seen = append(seen, line)
				return tc.match(line)
			}, tc.keep, 0)
			checkErr(t, err, tc.wantErr)
			if got != tc.want {
				t.Fatalf("Find = %q, want %q", got, tc.want)
			}
			if !slices.Equal(seen, tc.lines[:tc.seen]) {
				t.Fatalf("match saw %q, want the list's first %d lines in order", seen, tc.seen)
			}
			if tc.lines != nil {
				checkLines(t, s, "l", tc.after)
			}
		})
	}
}
