package store

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// tape is a Recorder that keeps the records in memory.
type tape struct{ records [][]byte }

func (tp *tape) Record(change []byte) (uint64, Commit) {
	tp.records = append(tp.records, slices.Clone(change))
	return uint64(len(tp.records)), committed{}
}

func contentsOf(t *testing.T, m *Memory) map[string][]string {
	t.Helper()
	all := map[string][]string{}
	for _, l := range m.Lengths() {
		all[l.Name], _ = m.Lines(l.Name)
	}
	return all
}

// TestReplayReproducesTheLists records random operations (RANDOM picks included) and replays the
// records in a fresh store: the lists must be equal line for line, and the random source is not
// consulted again.
func TestReplayReproducesTheLists(t *testing.T) {
	m := NewMemory()
	m.intN = rand.New(rand.NewPCG(1, 2)).IntN
	rec := &tape{}
	m.StartRecording(rec)
	mo := &model{lists: map[string][]string{}, intN: rand.New(rand.NewPCG(1, 2)).IntN}
	ops := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		runModelStep(t, ops, m, mo)
	}
	if err := m.Insert("bulk", []string{"x", "y"}, First); err != nil {
		t.Fatal(err)
	}
	replayed := NewMemory()
	replayed.intN = func(int) int { t.Fatal("a replay drew a random index"); return 0 }
	for i, r := range rec.records {
		if err := replayed.Replay(uint64(i+1), r); err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
	}
	if want, got := contentsOf(t, m), contentsOf(t, replayed); !maps.EqualFunc(want, got, slices.Equal) {
		t.Fatalf("replayed lists differ from the recorded ones")
	}
	checkInvariants(t, replayed)

	// Records the list already holds are skipped: replaying everything again changes nothing.
	for i, r := range rec.records {
		if err := replayed.Replay(uint64(i+1), r); err != nil {
			t.Fatal(err)
		}
	}
	if want, got := contentsOf(t, m), contentsOf(t, replayed); !maps.EqualFunc(want, got, slices.Equal) {
		t.Fatalf("a second replay changed the lists")
	}
}

func TestReplayRefusesMalformedRecords(t *testing.T) {
	for name, record := range map[string]string{
		"no name":           "",
		"name too long":     "\x05ab",
		"unknown step":      "\x01lZ",
		"remove past end":   "\x01lr\x05",
		"keep unremoved":    "\x01lk\x01",
		"line too long":     "\x01lb\x09abc",
		"replace too many":  "\x01lR\x09\x01a",
		"unfinished number": "\x01lr\x80",
	} {
		t.Run(name, func(t *testing.T) {
			if err := NewMemory().Replay(1, []byte(record)); !errors.Is(err, errMalformed) {
				t.Fatalf("Replay(%q) = %v, want a malformed record", record, err)
			}
		})
	}
}
