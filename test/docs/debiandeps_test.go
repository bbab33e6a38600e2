package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// debianDeps runs hack/debian-deps.sh with args and returns the words it prints.
func debianDeps(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("bash", append([]string{filepath.Join(root, "hack/debian-deps.sh")}, args...)...).Output()
	if err != nil {
		t.Fatalf("hack/debian-deps.sh %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// installsSentence is how the documents name a target's Debian packages: "`make TARGET`
// installs `PACKAGE PACKAGE ...`".
var installsSentence = regexp.MustCompile("`make ([a-z-]+)` installs `([^`]+)`")

// TestDocumentsNameThePackagesTheStepInstalls checks that every "`make X` installs `...`" of the
// README and hack/cluster's README names exactly the packages hack/debian-deps.sh installs for X,
// and that the README's quick start names them for make demo and make test.
func TestDocumentsNameThePackagesTheStepInstalls(t *testing.T) {
	quickStart := map[string]bool{}
	for _, doc := range []string{"README.md", "hack/cluster/README.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, m := range installsSentence.FindAllStringSubmatchIndex(text, -1) {
			target, named := text[m[2]:m[3]], strings.Fields(text[m[4]:m[5]])
			want := debianDeps(t, "--list", target)
			if !sameSet(named, want) {
				t.Errorf("%s names for make %s:\n  %s\nhack/debian-deps.sh --list %s installs:\n  %s\n(missing from the document: %v; not installed: %v)",
					doc, target, strings.Join(named, " "), target, strings.Join(want, " "), minus(want, named), minus(named, want))
			}
			if doc == "README.md" && section(text, m[0]) == "Quick start" {
				quickStart[target] = true
			}
		}
	}
	for _, target := range []string{"demo", "test"} {
		if !quickStart[target] {
			t.Errorf("README's Quick start does not say what make %s installs (\"`make %s` installs `...`\")", target, target)
		}
	}
	// The quick start asks for nothing else.
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "as root, with Go 1.26, `make` and `git`:") {
		t.Error("README's Quick start no longer asks for Go 1.26, make and git only")
	}
}

// TestOnlyTheDependencyStepInstallsPackages checks that no script, the Makefile nor .ci/run runs
// apt-get but hack/debian-deps.sh (and its check, which simulates): one place knows the lists.
func TestOnlyTheDependencyStepInstallsPackages(t *testing.T) {
	files := []string{".ci/run", "Makefile"}
	err := filepath.WalkDir(filepath.Join(root, "hack"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".sh") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile(`"[^"]*"|'[^']*'`)
	for _, file := range files {
		if file == "hack/debian-deps.sh" || file == "hack/debian-deps-check.sh" {
			continue
		}
		f, err := os.Open(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		for n := 1; s.Scan(); n++ {
			code, _, _ := strings.Cut(quoted.ReplaceAllString(s.Text(), `""`), "#") // messages and comments may name it
			if strings.Contains(code, "apt-get") {
				t.Errorf("%s:%d runs apt-get: %s (hack/debian-deps.sh installs Debian packages)", file, n, strings.TrimSpace(s.Text()))
			}
		}
		f.Close()
	}
}

// TestTargetsStartWithTheDependencyStep checks the wiring: the first prerequisite of make test,
// examples-test, bench and faults (where the Makefile has it) is deps-TARGET; .ci/run runs the
// step (target ci) before its first make; hack/cluster's scripts run it before they build.
func TestTargetsStartWithTheDependencyStep(t *testing.T) {
	read := func(file string) string {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	makefile := read("Makefile")
	for _, target := range []string{"test", "examples-test", "bench", "faults"} {
		rule := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:([^=\n]*?)(##.*)?$`).FindStringSubmatch(makefile)
		if rule == nil {
			if target == "faults" {
				continue // not (yet) a target
			}
			t.Errorf("the Makefile has no rule for %s", target)
			continue
		}
		if prereqs := strings.Fields(rule[1]); len(prereqs) == 0 || prereqs[0] != "deps-"+target {
			t.Errorf("make %s's first prerequisite is not deps-%s: %s:%s", target, target, target, rule[1])
		}
	}
	if !regexp.MustCompile(`(?m)^DEBIAN_DEPS_TARGETS :=.*\bfaults\b`).MatchString(makefile) {
		t.Error("the Makefile's DEBIAN_DEPS_TARGETS lack faults")
	}

	ci := read(".ci/run")
	step, firstMake := strings.Index(ci, "\nhack/debian-deps.sh ci\n"), strings.Index(ci, "\nmake ")
	if step < 0 || firstMake < 0 || step > firstMake {
		t.Error(".ci/run does not run hack/debian-deps.sh ci before its first make")
	}
	if !strings.Contains(ci, "\nhack/debian-deps-check.sh\n") {
		t.Error(".ci/run does not run hack/debian-deps-check.sh")
	}

	for _, c := range []struct{ script, call, before string }{
		{"hack/cluster/demo.sh", `"$repo/hack/debian-deps.sh" demo`, "start_builds"},
		{"hack/cluster/e2e.sh", `"$repo/hack/debian-deps.sh" e2e`, "start_builds"},
		{"hack/cluster/up.sh", `"$repo/hack/debian-deps.sh" cluster`, `"$here/build.sh"`},
	} {
		text := read(c.script)
		call, before := strings.Index(text, c.call), strings.Index(text, "\n"+c.before)
		if call < 0 || before < 0 || call > before {
			t.Errorf("%s does not run %s before %s", c.script, c.call, c.before)
		}
	}
}

// section returns the title of the "## " section of markdown text that holds offset.
func section(text string, offset int) string {
	i := strings.LastIndex(text[:offset], "\n## ")
	if i < 0 {
		return ""
	}
	title, _, _ := strings.Cut(text[i+4:], "\n")
	return title
}

// sameSet says whether a and b hold the same words, as many times each.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// minus returns the words of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, w := range a {
		if !slices.Contains(b, w) {
			out = append(out, w)
		}
	}
	return out
}
