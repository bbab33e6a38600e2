package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// model is the obvious implementation of the Store semantics on plain slices, to compare the
// engine against.
type model struct {
	lists map[string][]string
	intN  func(n int) int
}

func (mo *model) read(name string, pos store.Position, n int, keep bool) ([]string, error) {
	lines, ok := mo.lists[name]
	switch {
	case !ok:
		return nil, store.ErrNotLoaded
	case len(lines) == 0:
		return nil, store.ErrEmpty
	case n > len(lines):
		return nil, &store.ShortListError{Want: n, Have: len(lines)}
	}
	var picked []string
	for range n {
		i := 0
		switch pos {
		case store.Last:
			i = len(lines) - 1
		case store.Random:
			i = mo.intN(len(lines))
		}
		picked = append(picked, lines[i])
		if i == 0 { // O(1), so that long drains stay quick
			lines = lines[1:]
		} else {
			lines = slices.Delete(lines, i, i+1)
		}
	}
	if keep {
		lines = append(lines, picked...)
	}
	mo.lists[name] = lines
	return picked, nil
}

func (mo *model) add(name, line string, pos store.Position, unique bool) error {
	lines := mo.lists[name]
	if unique && slices.Contains(lines, line) {
		mo.lists[name] = lines // the list exists even when the add fails
		return store.ErrDuplicate
	}
	if pos == store.First {
		mo.lists[name] = append([]string{line}, lines...)
	} else {
		mo.lists[name] = append(lines, line)
	}
	return nil
}

func (mo *model) find(name string, match func(string) (bool, error), keep bool) (string, error) {
	lines, ok := mo.lists[name]
	switch {
	case !ok:
		return "", store.ErrNotLoaded
	case len(lines) == 0:
		return "", store.ErrEmpty
	}
	for i, line := range lines {
		hit, err := match(line)
		if err != nil {
			return "", err
		}
		if hit {
			lines = slices.Delete(lines, i, i+1)
			if keep {
				lines = append(lines, line)
			}
			mo.lists[name] = lines
			return line, nil
		}
	}
	return "", store.ErrNoMatch
}

var errMatch = errors.New("match failed")

// TestMatchesSliceModel runs random operation sequences on the engine and on the model and
// compares every answer. Both draw their Random indexes from identically seeded sources, so they
// agree only if the engine asks for exactly one index per pick, against the shrinking list.
func TestMatchesSliceModel(t *testing.T) {
	seeds, steps := 16, 2000
	if testing.Short() {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ops := rand.New(rand.NewPCG(seed, 0))
			m := New()
			m.intN = rand.New(rand.NewPCG(seed, 1)).IntN
			mo := &model{lists: map[string][]string{}, intN: rand.New(rand.NewPCG(seed, 1)).IntN}
			for step := range steps {
				op := runModelStep(t, ops, m, mo)
				if step%25 == 0 || t.Failed() {
					compareAll(t, m, mo, op)
				}
			}
			compareAll(t, m, mo, "end")
		})
	}
}

// runModelStep applies one random operation to both and compares the answers. It returns a
// description of the operation for failure messages.
func runModelStep(t *testing.T, ops *rand.Rand, m *Memory, mo *model) string {
	t.Helper()
	name := []string{"a", "b", "c"}[ops.IntN(3)]
	// Few distinct lines, so that unique adds and finds meet duplicates.
	line := func() string { return fmt.Sprintf("v%d", ops.IntN(200)) }
	same := func(op string, got, want any, err, wantErr error) string {
		t.Helper()
		var short, wantShort *store.ShortListError
		sameErr := errors.Is(err, wantErr) ||
			errors.As(err, &short) && errors.As(wantErr, &wantShort) && *short == *wantShort
		if !sameErr || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: engine %q, %v; model %q, %v", op, got, err, want, wantErr)
		}
		return op
	}
	switch r := ops.IntN(100); {
	case r < 35:
		pos := store.Position(ops.IntN(3))
		n := 1 + ops.IntN(3)
		if ops.IntN(10) == 0 {
			n = 1 + ops.IntN(chunkCap)
		}
		keep := ops.IntN(2) == 0
		op := fmt.Sprintf("Read(%s, %d, %d, %t)", name, pos, n, keep)
		got, err := m.Read(ctx, name, pos, n, keep, 0)
		want, wantErr := mo.read(name, pos, n, keep)
		return same(op, got, want, err, wantErr)
	case r < 70:
		l, pos, unique := line(), store.Position(ops.IntN(2)), ops.IntN(2) == 0
		op := fmt.Sprintf("Add(%s, %s, %d, %t)", name, l, pos, unique)
		return same(op, nil, nil, m.Add(ctx, name, l, pos, unique), mo.add(name, l, pos, unique))
	case r < 85:
		target, failAt, keep := line(), ops.IntN(50), ops.IntN(2) == 0
		matcher := func() func(string) (bool, error) {
			calls := 0
			return func(s string) (bool, error) {
				if calls++; calls == failAt {
					return false, errMatch
				}
				return s == target || strings.HasSuffix(s, target[1:]+"7"), nil
			}
		}
		op := fmt.Sprintf("Find(%s, %s, failAt %d, %t)", name, target, failAt, keep)
		got, err := m.Find(ctx, name, matcher(), keep, 0)
		want, wantErr := mo.find(name, matcher(), keep)
		return same(op, got, want, err, wantErr)
	case r < 88:
		n := ops.IntN(4 * chunkCap)
		lines := make([]string, n)
		for i := range lines {
			lines[i] = line()
		}
		m.Replace(ctx, name, lines, "")
		mo.lists[name] = slices.Clone(lines)
		return fmt.Sprintf("Replace(%s, %d lines)", name, n)
	case r < 90:
		_, existed := mo.lists[name]
		if existed {
			mo.lists[name] = []string{}
		}
		got, err := m.Reset(ctx, name)
		return same("Reset("+name+")", got, existed, err, nil)
	case r < 92:
		m.Ensure(ctx, name)
		if _, ok := mo.lists[name]; !ok {
			mo.lists[name] = []string{}
		}
		return "Ensure(" + name + ")"
	default:
		got, err := m.Length(ctx, name)
		want, wantErr := len(mo.lists[name]), error(nil)
		if _, ok := mo.lists[name]; !ok {
			want, wantErr = 0, store.ErrNotLoaded
		}
		return same("Length("+name+")", got, want, err, wantErr)
	}
}

// compareAll compares every list's content and the engine's internal rules.
func compareAll(t *testing.T, m *Memory, mo *model, after string) {
	t.Helper()
	var want []store.ListInfo
	for name, lines := range mo.lists {
		want = append(want, store.ListInfo{Name: name, Length: len(lines)})
		got, err := m.Lines(ctx, name)
		if err != nil || !slices.Equal(got, lines) {
			t.Fatalf("after %s: list %s = %d lines, %v; model has %d", after, name, len(got), err, len(lines))
		}
	}
	slices.SortFunc(want, func(a, b store.ListInfo) int { return strings.Compare(a.Name, b.Name) })
	if got := lengths(m); !slices.Equal(got, want) {
		t.Fatalf("after %s: Lengths = %v, model %v", after, got, want)
	}
	checkInvariants(t, m)
}
