package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

var months = []string{"Jan", "Feb", "Mar", "Apr", "May", "June"}

// storeWith returns a store holding one list, "l", with a copy of lines; nil lines means no list.
// ctx is the context of the tests' reads, which never end early unless a test says so.
var ctx = context.Background()

func storeWith(lines []string) *Memory {
	m := New()
	if lines != nil {
		m.Replace(ctx, "l", slices.Clone(lines), "")
	}
	return m
}

// scriptRandom makes m's Random reads take the given indexes, in order, and fails the test if a
// read asks for more or for an index out of range.
func scriptRandom(t *testing.T, m *Memory, indexes []int) {
	t.Helper()
	m.intN = func(n int) int {
		if len(indexes) == 0 {
			t.Fatalf("unexpected store.Random pick over %d lines", n)
		}
		i := indexes[0]
		indexes = indexes[1:]
		if i >= n {
			t.Fatalf("scripted index %d out of range for %d lines", i, n)
		}
		return i
	}
	t.Cleanup(func() {
		if len(indexes) > 0 {
			t.Errorf("scripted store.Random indexes %v were never used", indexes)
		}
	})
}

// checkErr compares err with want: a sentinel by errors.Is, a *ShortListError by value.
func checkErr(t *testing.T, err, want error) {
	t.Helper()
	var short, wantShort *store.ShortListError
	switch {
	case errors.As(want, &wantShort):
		if !errors.As(err, &short) || *short != *wantShort {
			t.Fatalf("error = %v, want %v", err, want)
		}
	case !errors.Is(err, want):
		t.Fatalf("error = %v, want %v", err, want)
	}
}

// checkLines fails unless list name holds exactly want.
func checkLines(t *testing.T, m *Memory, name string, want []string) {
	t.Helper()
	got, err := m.Lines(ctx, name)
	if err != nil {
		t.Fatalf("Lines(%q): %v", name, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list %q = %q, want %q", name, got, want)
	}
}

func TestRead(t *testing.T) {
	tests := map[string]struct {
		lines   []string // nil: no list
		pos     store.Position
		n       int
		keep    bool
		random  []int // the indexes Random picks, in order
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
		"RANDOM with KEEP moves the line to the end": {lines: months, pos: store.Random, n: 1, keep: true, random: []int{2},
			want: []string{"Mar"}, after: []string{"Jan", "Feb", "Apr", "May", "June", "Mar"}},
		"RANDOM without KEEP removes": {lines: months, pos: store.Random, n: 1, random: []int{5},
			want: []string{"June"}, after: months[:5]},
		"READMULTI FIRST with KEEP": {lines: months, pos: store.First, n: 2, keep: true,
			want: []string{"Jan", "Feb"}, after: []string{"Mar", "Apr", "May", "June", "Jan", "Feb"}},
		"READMULTI LAST with KEEP reverses the tail": {lines: months, pos: store.Last, n: 2, keep: true,
			want: []string{"June", "May"}, after: []string{"Jan", "Feb", "Mar", "Apr", "June", "May"}},
		"READMULTI LAST returns lines last first": {lines: months, pos: store.Last, n: 3,
			want: []string{"June", "May", "Apr"}, after: months[:3]},
		"READMULTI RANDOM picks against the shrinking list": {lines: months, pos: store.Random, n: 3, keep: true, random: []int{0, 0, 3},
			want: []string{"Jan", "Feb", "June"}, after: []string{"Mar", "Apr", "May", "Jan", "Feb", "June"}},
		"READMULTI the whole list": {lines: months, pos: store.First, n: 6,
			want: months, after: []string{}},
		"unknown list": {pos: store.First, n: 1, wantErr: store.ErrNotLoaded},
		"empty list":   {lines: []string{}, pos: store.First, n: 1, wantErr: store.ErrEmpty, after: []string{}},
		"an empty list is checked before the count": {lines: []string{}, pos: store.Last, n: 5, wantErr: store.ErrEmpty, after: []string{}},
		"more lines than the list holds": {lines: months, pos: store.First, n: 7,
			wantErr: &store.ShortListError{Want: 7, Have: 6}, after: months},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := storeWith(tc.lines)
			scriptRandom(t, m, tc.random)
			got, err := m.Read(ctx, "l", tc.pos, tc.n, tc.keep, 0)
			checkErr(t, err, tc.wantErr)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Read = %q, want %q", got, tc.want)
			}
			if tc.lines != nil {
				checkLines(t, m, "l", tc.after)
			}
		})
	}
}

func TestReadRefusesBadArguments(t *testing.T) {
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
			m := storeWith(months)
			if got, err := m.Read(ctx, "l", tc.pos, tc.n, false, 0); err == nil {
				t.Fatalf("Read = %q, want an error", got)
			}
			checkLines(t, m, "l", months)
		})
	}
}

func TestReadLastKeepReturnsTheSameLineForever(t *testing.T) {
	m := storeWith(months)
	for range 5 {
		got, err := m.Read(ctx, "l", store.Last, 1, true, 0)
		if err != nil || !slices.Equal(got, []string{"June"}) {
			t.Fatalf("Read = %q, %v; want [June]", got, err)
		}
	}
	checkLines(t, m, "l", months)
}

// numbered returns n distinct lines in order.
func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line-%07d", i)
	}
	return lines
}

func TestReadFirstKeepRotatesALongList(t *testing.T) {
	lines := numbered(3*chunkCap + 17) // several chunks
	m := storeWith(lines)
	for i := range 2 * len(lines) {
		got, err := m.Read(ctx, "l", store.First, 1, true, 0)
		if err != nil || got[0] != lines[i%len(lines)] {
			t.Fatalf("read %d = %q, %v; want %q", i, got, err, lines[i%len(lines)])
		}
	}
	checkLines(t, m, "l", lines)
}

func TestRandomReadsAreDistinctAndCoverTheList(t *testing.T) {
	lines := numbered(5 * chunkCap)
	m := storeWith(lines)
	got, err := m.Read(ctx, "l", store.Random, len(lines), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(got, lines) {
		t.Fatal("Random read the lines in list order")
	}
	slices.Sort(got)
	if !slices.Equal(got, lines) {
		t.Fatal("Random picks are not a permutation of the list")
	}
}

func TestRandomReadsAreUniform(t *testing.T) {
	const reads = 50_000
	lines := numbered(10)
	m := storeWith(lines)
	counts := map[string]int{}
	for range reads {
		got, err := m.Read(ctx, "l", store.Random, 1, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		counts[got[0]]++
	}
	// Each count is binomial with mean 5000 and standard deviation about 67.
	for _, line := range lines {
		if c := counts[line]; c < 4500 || c > 5500 {
			t.Errorf("%s picked %d times in %d reads, want about %d", line, c, reads, reads/len(lines))
		}
	}
}

func TestAdd(t *testing.T) {
	tests := map[string]struct {
		lines   []string // nil: no list
		line    string
		pos     store.Position
		unique  bool
		wantErr error
		after   []string
	}{
		"FIRST inserts at the front":  {lines: []string{"a", "b"}, line: "x", pos: store.First, after: []string{"x", "a", "b"}},
		"LAST appends":                {lines: []string{"a", "b"}, line: "x", pos: store.Last, after: []string{"a", "b", "x"}},
		"a new name creates the list": {line: "x", pos: store.Last, after: []string{"x"}},
		"an empty line is a line":     {lines: []string{"a"}, line: "", pos: store.Last, after: []string{"a", ""}},
		"duplicates are allowed without UNIQUE": {lines: []string{"a", "b"}, line: "a", pos: store.Last,
			after: []string{"a", "b", "a"}},
		"UNIQUE refuses an equal line": {lines: []string{"a", "b"}, line: "b", pos: store.First, unique: true,
			wantErr: store.ErrDuplicate, after: []string{"a", "b"}},
		"UNIQUE compares exactly": {lines: []string{"a", "b"}, line: "B", pos: store.First, unique: true,
			after: []string{"B", "a", "b"}},
		"UNIQUE adds a new line": {lines: []string{"a", "b"}, line: "c", pos: store.Last, unique: true,
			after: []string{"a", "b", "c"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := storeWith(tc.lines)
			checkErr(t, m.Add(ctx, "l", tc.line, tc.pos, tc.unique), tc.wantErr)
			checkLines(t, m, "l", tc.after)
		})
	}
}

func TestAddRefusesRandomButCreatesTheList(t *testing.T) {
	m := New()
	if err := m.Add(ctx, "l", "x", store.Random, false); err == nil {
		t.Fatal("Add at store.Random succeeded, want an error")
	}
	checkLines(t, m, "l", []string{})
}

func TestUniqueIndexFollowsEveryChange(t *testing.T) {
	m := New()
	step := 0
	add := func(line string, wantErr error) {
		t.Helper()
		step++
		if err := m.Add(ctx, "l", line, store.Last, true); !errors.Is(err, wantErr) {
			t.Fatalf("step %d: unique Add(%q) = %v, want %v", step, line, err, wantErr)
		}
		checkInvariants(t, m)
	}
	do := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func(pos store.Position, keep bool) {
		t.Helper()
		_, err := m.Read(ctx, "l", pos, 1, keep, 0)
		do(err)
	}
	equals := func(want string) func(string) (bool, error) {
		return func(line string) (bool, error) { return line == want, nil }
	}

	add("a", nil)
	add("b", nil)
	add("a", store.ErrDuplicate)
	read(store.First, false) // [b]
	add("a", nil)            // [b a]
	read(store.First, true)  // [a b]
	add("b", store.ErrDuplicate)
	_, err := m.Find(ctx, "l", equals("a"), false, 0) // [b]
	do(err)
	add("a", nil) // [b a]
	do(m.Add(ctx, "l", "c", store.Last, false))
	do(m.Add(ctx, "l", "c", store.First, false)) // [c b a c]: c twice
	add("c", store.ErrDuplicate)
	read(store.Last, false) // [c b a]
	add("c", store.ErrDuplicate)
	read(store.First, false) // [b a]
	add("c", nil)            // [b a c]
	m.Replace(ctx, "l", []string{"x", "y"}, "")
	add("a", nil)
	add("x", store.ErrDuplicate)
	m.Reset(ctx, "l")
	add("x", nil)
	read(store.First, false) // empty
	add("x", nil)
	checkLines(t, m, "l", []string{"x"})
}

// contains is a Find match for the lines that contain s.
func contains(s string) func(string) (bool, error) {
	return func(line string) (bool, error) { return strings.Contains(line, s), nil }
}

func TestFind(t *testing.T) {
	errRegex := errors.New("regex timeout")
	tests := map[string]struct {
		lines     []string // nil: no list
		match     func(string) (bool, error)
		keep      bool
		want      string
		wantErr   error
		wantCalls int // how many lines match saw
		after     []string
	}{
		"the first hit wins and KEEP moves it to the end": {lines: []string{"a1", "b", "a2"}, match: contains("a"), keep: true,
			want: "a1", wantCalls: 1, after: []string{"b", "a2", "a1"}},
		"without KEEP the hit is removed": {lines: []string{"b", "a1", "a2"}, match: contains("a"),
			want: "a1", wantCalls: 2, after: []string{"b", "a2"}},
		"a hit on the last line": {lines: []string{"a", "b", "c"}, match: contains("c"), keep: true,
			want: "c", wantCalls: 3, after: []string{"a", "b", "c"}},
		"no hit leaves the list unchanged": {lines: []string{"a", "b"}, match: contains("z"), keep: true,
			wantErr: store.ErrNoMatch, wantCalls: 2, after: []string{"a", "b"}},
		"an error from match stops the scan": {lines: []string{"a", "b", "c"},
			match: func(line string) (bool, error) {
				if line == "b" {
					return false, errRegex
				}
				return line == "c", nil
			},
			wantErr: errRegex, wantCalls: 2, after: []string{"a", "b", "c"}},
		"empty list":   {lines: []string{}, match: contains(""), wantErr: store.ErrEmpty, after: []string{}},
		"unknown list": {match: contains(""), wantErr: store.ErrNotLoaded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := storeWith(tc.lines)
			calls := 0
			got, err := m.Find(ctx, "l", func(line string) (bool, error) {
				calls++
				return tc.match(line)
			}, tc.keep, 0)
			checkErr(t, err, tc.wantErr)
			if got != tc.want || calls != tc.wantCalls {
				t.Fatalf("Find = %q after %d calls, want %q after %d", got, calls, tc.want, tc.wantCalls)
			}
			if tc.lines != nil {
				checkLines(t, m, "l", tc.after)
			}
		})
	}
}

func TestReplaceCreatesOrReplaces(t *testing.T) {
	m := New()
	m.Replace(ctx, "l", []string{"a", "b"}, "")
	checkLines(t, m, "l", []string{"a", "b"})
	m.Replace(ctx, "l", []string{"c"}, "")
	checkLines(t, m, "l", []string{"c"})
	m.Replace(ctx, "l", nil, "")
	checkLines(t, m, "l", []string{})
}

func TestReplaceKeepsTheSliceWithoutPerLineWork(t *testing.T) {
	lines := numbered(100 * chunkCap)
	m := New()
	// Replacing with the same slice again is safe here because nothing changes the list between.
	allocs := testing.AllocsPerRun(5, func() { m.Replace(ctx, "l", lines, "") })
	if maxAllocs := float64(len(lines)/chunkCap + 10); allocs > maxAllocs {
		t.Fatalf("Replace of %d lines made %.0f allocations, want at most %.0f (one per chunk)",
			len(lines), allocs, maxAllocs)
	}
	checkLines(t, m, "l", lines)
}

func TestLinesReturnsACopy(t *testing.T) {
	m := storeWith(months)
	got, err := m.Lines(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	got[0] = "changed"
	checkLines(t, m, "l", months)
	if _, err := m.Lines(ctx, "missing"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Lines of an unknown list: %v, want ErrNotLoaded", err)
	}
}

func TestResetEmptiesButNeverCreates(t *testing.T) {
	m := storeWith(months)
	if existed, err := m.Reset(ctx, "l"); !existed || err != nil {
		t.Fatal("Reset of an existing list reported false")
	}
	checkLines(t, m, "l", []string{})
	if existed, err := m.Reset(ctx, "missing"); existed || err != nil {
		t.Fatal("Reset of an unknown list reported true")
	}
	if _, err := m.Length(ctx, "missing"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Length after Reset of an unknown list: %v, want ErrNotLoaded", err)
	}
}

func TestEnsure(t *testing.T) {
	m := storeWith(months)
	m.Ensure(ctx, "l")
	checkLines(t, m, "l", months)
	m.Ensure(ctx, "new")
	checkLines(t, m, "new", []string{})
}

func TestLength(t *testing.T) {
	m := storeWith(months)
	if n, err := m.Length(ctx, "l"); n != 6 || err != nil {
		t.Fatalf("Length = %d, %v; want 6", n, err)
	}
	if _, err := m.Length(ctx, "missing"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Length of an unknown list: %v, want ErrNotLoaded", err)
	}
}

func TestLengthsListsEveryKeySortedByBytes(t *testing.T) {
	m := New()
	if got := lengths(m); len(got) != 0 {
		t.Fatalf("Lengths of a new store = %v, want none", got)
	}
	for _, name := range []string{"b", "é", "B", "a", ""} {
		if err := m.Add(ctx, name, "x", store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	m.Ensure(ctx, "c")
	if err := m.Add(ctx, "a", "y", store.Last, false); err != nil {
		t.Fatal(err)
	}
	want := []store.ListInfo{{Name: "", Length: 1}, {Name: "B", Length: 1}, {Name: "a", Length: 2}, {Name: "b", Length: 1}, {Name: "c", Length: 0}, {Name: "é", Length: 1}}
	if got := lengths(m); !slices.Equal(got, want) {
		t.Fatalf("Lengths = %v, want %v", got, want)
	}
}

func TestKeysAreNeverDeleted(t *testing.T) {
	m := New()
	m.Replace(ctx, "read", []string{"a"}, "")
	m.Replace(ctx, "found", []string{"a"}, "")
	m.Replace(ctx, "reset", []string{"a"}, "")
	if _, err := m.Read(ctx, "read", store.First, 1, false, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Find(ctx, "found", func(string) (bool, error) { return true, nil }, false, 0); err != nil {
		t.Fatal(err)
	}
	m.Reset(ctx, "reset")
	want := []store.ListInfo{{Name: "found", Length: 0}, {Name: "read", Length: 0}, {Name: "reset", Length: 0}}
	if got := lengths(m); !slices.Equal(got, want) {
		t.Fatalf("Lengths = %v, want %v", got, want)
	}
	for _, name := range []string{"read", "found", "reset"} {
		if _, err := m.Read(ctx, name, store.First, 1, false, 0); !errors.Is(err, store.ErrEmpty) {
			t.Errorf("Read of emptied %q: %v, want ErrEmpty", name, err)
		}
	}
}

// lengths is the name and length of every list, sorted by name.
func lengths(m *Memory) []store.ListInfo {
	infos, err := m.Lists(ctx)
	if err != nil {
		panic(err)
	}
	return infos
}
