package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// closedTape is a tape whose Writable says it cannot write (a full disk under the journal).
type closedTape struct {
	tape
	err error
}

func (c *closedTape) Writable() error { return c.err }

// While the recorder cannot write, every change is refused before it is made, with
// store.ErrUnavailable: nothing changes and nothing is recorded. Reads that change nothing go on.
// Once it writes again, changes do too.
func TestChangesRefusedWhileRecorderCannotWrite(t *testing.T) {
	ctx := context.Background()
	m := New()
	rec := &closedTape{}
	m.StartRecording(rec)
	if err := m.Add(ctx, "l", "a", store.Last, false); err != nil {
		t.Fatal(err)
	}
	rec.err = errors.New("no space left on device")
	recorded := len(rec.records)
	match := func(string) (bool, error) { return true, nil }
	changes := map[string]func() error{
		"Add":     func() error { return m.Add(ctx, "l", "b", store.Last, false) },
		"Add new": func() error { return m.Add(ctx, "new", "b", store.Last, false) },
		"Insert":  func() error { return m.Insert(ctx, "l", []string{"b"}, store.First) },
		"Replace": func() error { return m.Replace(ctx, "l", []string{"b"}, "") },
		"Ensure":  func() error { return m.Ensure(ctx, "other") },
		"Reset":   func() error { _, err := m.Reset(ctx, "l"); return err },
		"Read":    func() error { _, err := m.Read(ctx, "l", store.First, 1, false, 0); return err },
		"Read keep": func() error {
			_, err := m.Read(ctx, "l", store.First, 1, true, 0)
			return err
		},
		"Find": func() error { _, err := m.Find(ctx, "l", match, false, 0); return err },
	}
	for name, change := range changes {
		if err := change(); !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, rec.err) {
			t.Errorf("%s while the recorder cannot write: %v, want store.ErrUnavailable wrapping its error", name, err)
		}
	}
	if len(rec.records) != recorded {
		t.Errorf("%d records taken while refusing", len(rec.records)-recorded)
	}
	if lines, err := m.Lines(ctx, "l"); err != nil || len(lines) != 1 || lines[0] != "a" {
		t.Errorf("list l is %q, %v; want [a]", lines, err)
	}
	if n, err := m.Length(ctx, "l"); err != nil || n != 1 {
		t.Errorf("Length = %d, %v", n, err)
	}
	if lists, _ := m.Lists(ctx); len(lists) != 1 {
		t.Errorf("lists %v: a refused change created one", lists)
	}
	rec.err = nil
	if got, err := m.Read(ctx, "l", store.First, 1, false, 0); err != nil || got[0] != "a" {
		t.Errorf("Read once writable: %q, %v", got, err)
	}
}
