package testutil

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	lines := Numbered("p", 3)
	if want := []string{"p-000000", "p-000001", "p-000002"}; !slices.Equal(lines, want) {
		t.Errorf("Numbered: %q", lines)
	}
	if got := File(lines); got != "p-000000\np-000001\np-000002\n" {
		t.Errorf("File: %q", got)
	}
	if got := File(nil); got != "" {
		t.Errorf("File of no line: %q", got)
	}
}

func TestBodies(t *testing.T) {
	for _, text := range []string{"", "a;b", "</body>"} {
		if got, ok := OKLine(OKBody(text)); !ok || got != text {
			t.Errorf("OKLine(OKBody(%q)) = %q, %v", text, got, ok)
		}
	}
	if _, ok := OKLine(KOBody("No more line !")); ok {
		t.Error("OKLine took a KO body")
	}
}

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, time.Second, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}
}

// skipChild is set in the child test binary of TestSkipFailsInCI, the only place its test skips.
const skipChild = "STS_TESTUTIL_SKIP_CHILD"

func TestSkipChild(t *testing.T) {
	if os.Getenv(skipChild) == "" {
		return
	}
	if os.Getenv(skipChild) == "waived" {
		SkipWaived(t, MemoryOnly, "waived")
	}
	Skip(t, "the tool is missing")
}

// Skip skips, but fails under STS_REQUIRE_ALL=1; a waived skip skips under both.
func TestSkipFailsInCI(t *testing.T) {
	for _, c := range []struct {
		child, requireAll string
		fails             bool
	}{{"plain", "", false}, {"plain", "1", true}, {"waived", "1", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipChild$", "-test.v")
		cmd.Env = append(os.Environ(), skipChild+"="+c.child, "STS_REQUIRE_ALL="+c.requireAll)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.fails || !c.fails && !strings.Contains(string(out), "--- SKIP") {
			t.Errorf("a %s skip with STS_REQUIRE_ALL=%q: %v\n%s", c.child, c.requireAll, err, out)
		}
	}
}

// rawSkip is a call of a Skip, Skipf or SkipNow method: testing's own unless on testutil.
var rawSkip = regexp.MustCompile(`(\w+)\.Skip(f|Now)?\(`)

// No test skips by itself: every skip goes through Skip or SkipWaived, which CI turns into a
// failure unless waived. A skip under testing.Short() is left alone: CI does not pass -short.
func TestNoSilentSkip(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// Tools, caches and build output hold other modules' code, not this one's tests.
			if rel == "bin" || rel == "dist" || rel == filepath.Join("internal", "testutil") || rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		checked++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		lines := bufio.NewScanner(f)
		previous := ""
		for n := 1; lines.Scan(); n++ {
			line := lines.Text()
			if m := rawSkip.FindStringSubmatch(line); m != nil && m[1] != "testutil" && !strings.Contains(previous, "testing.Short()") {
				t.Errorf("%s:%d skips by itself, which CI cannot tell from a pass: use testutil.Skip or testutil.SkipWaived\n\t%s", rel, n, strings.TrimSpace(line))
			}
			previous = line
		}
		return lines.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files under %s: not the repository's root", checked, root)
	}
}
