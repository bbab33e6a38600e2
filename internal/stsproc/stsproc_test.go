package stsproc

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps the failures and the cleanups of what it is given to, so
// that a test can run them and look at what failed.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Failed() bool { return len(r.errors) > 0 }

// end runs the cleanups as a test's end does, the last registered first.
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// A program built with the race detector that reports a data race fails the test that started
// it through Start, whether it is still running when the test ends or exited before; the same
// program built without the race detector does not. Built with -race here whatever this test's
// build (make test runs it with -race; the detector needs cgo, as go test -race does).
func TestADataRaceFailsTheTest(t *testing.T) {
	dir := t.TempDir()
	racy, plain := filepath.Join(dir, "racy-race"), filepath.Join(dir, "racy")
	if err := build("./testdata/racy", racy, true); err != nil {
		t.Fatal(err)
	}
	if err := BuildWithoutRace("./testdata/racy", plain); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, binary string
		args         []string
		wantFailed   bool
	}{
		{"race, still running", racy, []string{"wait"}, true},
		{"race, exited", racy, nil, true},
		{"no race detector", plain, []string{"wait"}, false},
	} {
		r := &recorder{TB: t}
		p := Start(r, c.binary, 0, c.args...)
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(p.Logs.String(), "racy: counted") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the program printed nothing in 30 s: %q", c.name, p.Logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(c.args) == 0 {
			if code := p.ExitCode(t, 30*time.Second); code != 66 {
				t.Errorf("%s: exit status %d, want the race detector's 66", c.name, code)
			}
		}
		r.end()
		if failed := len(r.errors) == 1 && strings.Contains(r.errors[0], raceWarning); failed != c.wantFailed {
			t.Errorf("%s: the test failed: %v, want %v; its errors: %q", c.name, r.Failed(), c.wantFailed, r.errors)
		}
	}
}
