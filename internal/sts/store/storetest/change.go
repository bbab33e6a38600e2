package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

func testAdd(t *testing.T, newStore Factory) {
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
		"UNIQUE adds to a new list": {line: "c", pos: store.First, unique: true, after: []string{"c"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, store.Limits{})
			fill(t, s, "l", tc.lines)
			checkErr(t, s.Add(t.Context(), "l", tc.line, tc.pos, tc.unique), tc.wantErr)
			checkLines(t, s, "l", tc.after)
		})
	}
}

func testAddRefusesRandomButCreatesTheList(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	if err := s.Add(t.Context(), "l", "x", store.Random, false); err == nil {
		t.Fatal("Add at Random succeeded, want an error")
	}
	checkLines(t, s, "l", []string{})
}

// testInsertIsOneChange checks that Insert keeps the order of its lines at either end.
func testInsertIsOneChange(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	fill(t, s, "l", []string{"m"})
	must(t, s.Insert(ctx, "l", []string{"a", "b"}, store.First))
	must(t, s.Insert(ctx, "l", []string{"y", "z"}, store.Last))
	checkLines(t, s, "l", []string{"a", "b", "m", "y", "z"})
	must(t, s.Insert(ctx, "new", []string{"1", "2"}, store.First))
	checkLines(t, s, "new", []string{"1", "2"})
	must(t, s.Insert(ctx, "empty", nil, store.Last))
	checkLines(t, s, "empty", []string{})
}

func testInsertRefusesRandom(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	if err := s.Insert(t.Context(), "l", []string{"x"}, store.Random); err == nil {
		t.Fatal("Insert at Random succeeded, want an error")
	}
	checkLines(t, s, "l", months)
}

// testUniqueAddFollowsEveryChange makes a unique Add after each kind of change: whatever keeps
// the lines a backend compares against must follow reads, KEEP, FIND, plain adds, Insert,
// Replace and Reset.
func testUniqueAddFollowsEveryChange(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	step := 0
	add := func(line string, wantErr error) {
		t.Helper()
		step++
		if err := s.Add(ctx, "l", line, store.Last, true); !errors.Is(err, wantErr) {
			t.Fatalf("step %d: unique Add(%q) = %v, want %v", step, line, err, wantErr)
		}
	}
	read := func(pos store.Position, keep bool) {
		t.Helper()
		_, err := s.Read(ctx, "l", pos, 1, keep, 0)
		must(t, err)
	}
	equals := func(want string) store.Matcher {
		return func(line string) (bool, error) { return line == want, nil }
	}

	add("a", nil)
	add("b", nil)
	add("a", store.ErrDuplicate)
	read(store.First, false) // [b]
	add("a", nil)            // [b a]
	read(store.First, true)  // [a b]
	add("b", store.ErrDuplicate)
	_, err := s.Find(ctx, "l", equals("a"), false, 0) // [b]
	must(t, err)
	add("a", nil) // [b a]
	must(t, s.Add(ctx, "l", "c", store.Last, false))
	must(t, s.Add(ctx, "l", "c", store.First, false)) // [c b a c]: c twice
	add("c", store.ErrDuplicate)
	read(store.Last, false) // [c b a]
	add("c", store.ErrDuplicate)
	read(store.First, false) // [b a]
	add("c", nil)            // [b a c]
	_, err = s.Find(ctx, "l", equals("c"), true, 0)
	must(t, err)
	add("c", store.ErrDuplicate)
	must(t, s.Insert(ctx, "l", []string{"d", "e"}, store.First)) // [d e b a c]
	add("e", store.ErrDuplicate)
	_, err = s.Read(ctx, "l", store.First, 2, false, 0) // [b a c]
	must(t, err)
	add("e", nil)
	must(t, s.Replace(ctx, "l", []string{"x", "y"}, ""))
	add("a", nil)
	add("x", store.ErrDuplicate)
	_, err = s.Reset(ctx, "l")
	must(t, err)
	add("x", nil)
	read(store.First, false) // empty
	add("x", nil)
	checkLines(t, s, "l", []string{"x"})
}

func testReplaceCreatesOrReplaces(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	must(t, s.Replace(ctx, "l", []string{"a", "b"}, ""))
	checkLines(t, s, "l", []string{"a", "b"})
	must(t, s.Replace(ctx, "l", []string{"c"}, ""))
	checkLines(t, s, "l", []string{"c"})
	must(t, s.Replace(ctx, "l", nil, ""))
	checkLines(t, s, "l", []string{})
	must(t, s.Replace(ctx, "new", nil, ""))
	checkLines(t, s, "new", []string{})
}

// testReplaceRecordsTheDigest checks that a list's digest is what its last Replace gave it, and
// that no other change touches it: the lines read or added since a load are the clients' doing,
// which LoadOnce must not undo.
func testReplaceRecordsTheDigest(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	must(t, s.Add(ctx, "l", "a", store.Last, false))
	if got := infoOf(t, s, "l"); got.Digest != "" {
		t.Fatalf("a list created by Add has the digest %q", got.Digest)
	}
	must(t, s.Replace(ctx, "l", slices.Clone(months), "d1"))
	if got, want := infoOf(t, s, "l"), (store.ListInfo{Name: "l", Length: 6, Digest: "d1"}); got != want {
		t.Fatalf("after Replace: %+v, want %+v", got, want)
	}
	_, err := s.Read(ctx, "l", store.First, 1, true, 0)
	must(t, err)
	_, err = s.Read(ctx, "l", store.Random, 1, false, 0)
	must(t, err)
	_, err = s.Find(ctx, "l", contains("a"), false, 0)
	must(t, err)
	must(t, s.Add(ctx, "l", "x", store.First, true))
	must(t, s.Insert(ctx, "l", []string{"y", "z"}, store.Last))
	must(t, s.Ensure(ctx, "l"))
	if got := infoOf(t, s, "l"); got.Digest != "d1" {
		t.Fatalf("after reads and adds, the digest is %q, want d1", got.Digest)
	}
	_, err = s.Reset(ctx, "l")
	must(t, err)
	if got := infoOf(t, s, "l"); got.Digest != "d1" {
		t.Fatalf("after Reset, the digest is %q, want d1", got.Digest)
	}
	must(t, s.Replace(ctx, "l", []string{"b"}, "d2"))
	if got := infoOf(t, s, "l"); got.Digest != "d2" {
		t.Fatalf("after a second Replace, the digest is %q, want d2", got.Digest)
	}
	must(t, s.Replace(ctx, "l", []string{"c"}, ""))
	if got, want := infoOf(t, s, "l"), (store.ListInfo{Name: "l", Length: 1}); got != want {
		t.Fatalf("after a Replace without a digest: %+v, want %+v", got, want)
	}
}

func testLoadOnce(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	loadOnce := func(name string, lines []string, digest string, want bool, held string) {
		t.Helper()
		loaded, got, err := s.LoadOnce(ctx, name, slices.Clone(lines), digest)
		if err != nil || loaded != want || got != held {
			t.Fatalf("LoadOnce(%q, %q) = %t, %q, %v; want %t, %q", name, digest, loaded, got, err, want, held)
		}
		if got := infoOf(t, s, name); got.Digest != held {
			t.Fatalf("after LoadOnce(%q, %q) the digest is %q, want %q", name, digest, got.Digest, held)
		}
	}

	loadOnce("l", months, "d1", true, "d1") // a new list
	checkLines(t, s, "l", months)
	_, err := s.Read(ctx, "l", store.First, 1, false, 0)
	must(t, err)
	must(t, s.Add(ctx, "l", "added", store.Last, false))
	loadOnce("l", months, "d1", false, "d1") // what clients did since the load stays
	checkLines(t, s, "l", append(slices.Clone(months[1:]), "added"))
	// Another content, as a server started with other files would load: the first load stands,
	// since clients may have consumed its lines.
	loadOnce("l", []string{"x"}, "d2", false, "d1")
	checkLines(t, s, "l", append(slices.Clone(months[1:]), "added"))

	loadOnce("cleared", months, "d5", true, "d5")
	_, err = s.Reset(ctx, "cleared")
	must(t, err)
	loadOnce("cleared", months, "d5", false, "d5") // a RESET is the clients' doing too
	checkLines(t, s, "cleared", []string{})

	must(t, s.Add(ctx, "added", "a", store.Last, false))
	loadOnce("added", []string{"b"}, "d4", false, "") // a list a client created
	checkLines(t, s, "added", []string{"a"})
}

func testLinesReturnsACopy(t *testing.T, newStore Factory) {
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	got, err := s.Lines(t.Context(), "l")
	if err != nil {
		t.Fatal(err)
	}
	got[0] = "changed"
	checkLines(t, s, "l", months)
	if _, err := s.Lines(t.Context(), "missing"); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Lines of an unknown list: %v, want ErrNotLoaded", err)
	}
}

func testResetEmptiesButNeverCreates(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	if existed, err := s.Reset(ctx, "l"); !existed || err != nil {
		t.Fatalf("Reset of an existing list = %t, %v", existed, err)
	}
	checkLines(t, s, "l", []string{})
	if existed, err := s.Reset(ctx, "l"); !existed || err != nil {
		t.Fatalf("Reset of an empty list = %t, %v", existed, err)
	}
	if existed, err := s.Reset(ctx, "missing"); existed || err != nil {
		t.Fatalf("Reset of an unknown list = %t, %v", existed, err)
	}
	checkNotLoaded(t, s, "missing")
}

func testEnsure(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	must(t, s.Ensure(ctx, "l"))
	checkLines(t, s, "l", months)
	must(t, s.Ensure(ctx, "new"))
	checkLines(t, s, "new", []string{})
	must(t, s.Ensure(ctx, "new"))
	checkLines(t, s, "new", []string{})
}

func testLength(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	fill(t, s, "l", months)
	fill(t, s, "empty", []string{})
	for name, want := range map[string]int{"l": 6, "empty": 0} {
		if n, err := s.Length(ctx, name); n != want || err != nil {
			t.Fatalf("Length(%q) = %d, %v; want %d", name, n, err, want)
		}
	}
	checkNotLoaded(t, s, "missing")
}

func testListsAreSortedByBytes(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	if got := lists(t, s); len(got) != 0 {
		t.Fatalf("Lists of a new store = %v, want none", got)
	}
	for _, name := range []string{"b", "é", "B", "a", "", "a b", "z{x}"} {
		must(t, s.Add(ctx, name, "x", store.Last, false))
	}
	must(t, s.Ensure(ctx, "c"))
	must(t, s.Add(ctx, "a", "y", store.Last, false))
	must(t, s.Replace(ctx, "e", nil, "d"))
	want := []store.ListInfo{
		{Name: "", Length: 1}, {Name: "B", Length: 1}, {Name: "a", Length: 2}, {Name: "a b", Length: 1},
		{Name: "b", Length: 1}, {Name: "c", Length: 0}, {Name: "e", Length: 0, Digest: "d"},
		{Name: "z{x}", Length: 1}, {Name: "é", Length: 1},
	}
	if got := lists(t, s); !slices.Equal(got, want) {
		t.Fatalf("Lists = %+v, want %+v", got, want)
	}
}

func testKeysAreNeverDeleted(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	for _, name := range []string{"read", "found", "reset", "kept"} {
		fill(t, s, name, []string{"a"})
	}
	_, err := s.Read(ctx, "read", store.First, 1, false, 0)
	must(t, err)
	_, err = s.Find(ctx, "found", contains(""), false, 0)
	must(t, err)
	_, err = s.Reset(ctx, "reset")
	must(t, err)
	_, err = s.Read(ctx, "kept", store.Random, 1, false, 0)
	must(t, err)
	want := []store.ListInfo{{Name: "found"}, {Name: "kept"}, {Name: "read"}, {Name: "reset"}}
	if got := lists(t, s); !slices.Equal(got, want) {
		t.Fatalf("Lists = %+v, want %+v", got, want)
	}
	for _, info := range want {
		if _, err := s.Read(ctx, info.Name, store.First, 1, false, 0); !errors.Is(err, store.ErrEmpty) {
			t.Errorf("Read of emptied %q: %v, want ErrEmpty", info.Name, err)
		}
	}
}

// testChangesAreSeenThroughEveryStore checks that each change made through one store is what the
// other reads: stores sharing a backend hold one set of lists.
func testChangesAreSeenThroughEveryStore(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	must(t, a.Replace(ctx, "l", slices.Clone(months), "d1"))
	if got, want := lists(t, b), []store.ListInfo{{Name: "l", Length: 6, Digest: "d1"}}; !slices.Equal(got, want) {
		t.Fatalf("Lists = %+v, want %+v", got, want)
	}
	checkLines(t, b, "l", months)
	got, err := b.Read(ctx, "l", store.First, 1, false, 0)
	if err != nil || !slices.Equal(got, []string{"Jan"}) {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if n, err := a.Length(ctx, "l"); n != 5 || err != nil {
		t.Fatalf("Length = %d, %v; want 5", n, err)
	}
	must(t, a.Add(ctx, "l", "x", store.Last, true))
	checkErr(t, b.Add(ctx, "l", "x", store.First, true), store.ErrDuplicate)
	if loaded, held, err := b.LoadOnce(ctx, "l", slices.Clone(months), "d1"); loaded || held != "d1" || err != nil {
		t.Fatalf("LoadOnce of what the other store loaded = %t, %q, %v", loaded, held, err)
	}
	checkLines(t, a, "l", append(slices.Clone(months[1:]), "x"))
	if existed, err := b.Reset(ctx, "l"); !existed || err != nil {
		t.Fatalf("Reset = %t, %v", existed, err)
	}
	checkLines(t, a, "l", []string{})
	must(t, a.Ensure(ctx, "e"))
	checkLines(t, b, "e", []string{})
}

// testPageReadsWithoutChanging checks Page against Lines on a list with lines taken from its
// front and its middle (holes inside the memory store's chunks), at the edges of the list.
func testPageReadsWithoutChanging(t *testing.T, newStore Factory) {
	ctx := t.Context()
	s := newStore(t, store.Limits{})
	all := make([]string, 3000)
	for i := range all {
		all[i] = fmt.Sprintf("line %d", i)
	}
	fill(t, s, "l", all)
	if _, err := s.Read(ctx, "l", store.First, 5, false, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Find(ctx, "l", func(l string) (bool, error) { return l == "line 1500", nil }, false, 0); err != nil {
		t.Fatal(err)
	}
	want, err := s.Lines(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ offset, n int }{
		{0, 100}, {1490, 20}, {2900, 200}, {len(want) - 1, 5}, {len(want), 10}, {len(want) + 7, 10}, {10, 0},
		{math.MaxInt, 10}, {10, math.MaxInt}, // as a browser may ask: a page past any end
	} {
		lines, length, err := s.Page(ctx, "l", p.offset, p.n)
		if err != nil {
			t.Fatalf("Page(%d, %d): %v", p.offset, p.n, err)
		}
		page := []string{}
		if p.offset < len(want) {
			page = want[p.offset : p.offset+min(p.n, len(want)-p.offset)]
		}
		if length != len(want) || !slices.Equal(lines, page) {
			t.Fatalf("Page(%d, %d) = %q, %d; want %q, %d", p.offset, p.n, lines, length, page, len(want))
		}
	}
	checkLines(t, s, "l", want)
	fill(t, s, "empty", []string{})
	if lines, length, err := s.Page(ctx, "empty", 0, 10); len(lines) != 0 || length != 0 || err != nil {
		t.Fatalf("Page of an empty list = %q, %d, %v", lines, length, err)
	}
	if _, _, err := s.Page(ctx, "missing", 0, 10); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Page of an unknown list: %v, want ErrNotLoaded", err)
	}
	for _, bad := range [][2]int{{-1, 10}, {0, -1}} {
		if _, _, err := s.Page(ctx, "l", bad[0], bad[1]); !errors.Is(err, store.ErrBadPage) {
			t.Fatalf("Page(%d, %d): %v, want ErrBadPage", bad[0], bad[1], err)
		}
	}
}
