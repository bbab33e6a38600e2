package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/architecture.md is the map a newcomer reads first: it must name every Go package of the
// repository, name only paths and files that exist, and stay a map (150 lines at most), so that
// a package added, moved or renamed turns this red until the map follows.
func TestArchitectureMap(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "\n"); n > 150 {
		t.Errorf("docs/architecture.md has %d lines, over the map's 150: move detail to design.md or a doc.go", n)
	}

	var packages []string
	for _, file := range goFiles(t) {
		if dir := filepath.ToSlash(filepath.Dir(file)); dir != "." && !slices.Contains(packages, dir) {
			packages = append(packages, dir)
		}
	}
	named := func(path string) bool {
		return regexp.MustCompile(`(^|[^\w/.-])` + regexp.QuoteMeta(path) + `($|[^\w/-])`).MatchString(page)
	}
	for _, pkg := range packages {
		if !named(pkg) {
			t.Errorf("docs/architecture.md does not name the package %s", pkg)
		}
	}

	// Every path it names exists: a directory or file under the repository, or a file of the
	// package the path before it names (".go" names alone are looked for under internal/).
	for _, path := range slices.Compact(sortedMatches(`(?:internal|cmd|api|test|hack|charts|config|gitops)/[\w/-]*\w(?:\.(?:go|md|yaml|json|sh))?`, page)) {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist", path)
		}
	}
	for _, file := range slices.Compact(sortedMatches(`\b\w+\.go\b`, page)) {
		matches, _ := filepath.Glob(filepath.Join(root, "internal", "*", file))
		more, _ := filepath.Glob(filepath.Join(root, "internal", "*", "*", file))
		if len(matches)+len(more) == 0 {
			t.Errorf("docs/architecture.md names %s, which no package of internal/ has", file)
		}
	}
	if len(packages) < 10 {
		t.Fatalf("found %d packages: the walk looked in the wrong place", len(packages))
	}
}

// goFiles are the repository's Go files, relative to its root: not those of its tools (bin),
// caches, test data or build output.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains([]string{".git", "bin", ".cache", "testdata", "node_modules", "dist"}, d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sortedMatches(expr, text string) []string {
	found := regexp.MustCompile(expr).FindAllString(text, -1)
	slices.Sort(found)
	return found
}
